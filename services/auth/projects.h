/* projects.h: the admin REST API for projects (Backend.AI's groups) and
 * their members (docs/api.md "Admin REST"):
 *   /v1/admin/projects[?domain=]          GET list, POST create
 *   /v1/admin/projects/{id}               GET, PATCH, DELETE (deactivate)
 *   /v1/admin/projects/{id}/members       GET list, POST add, DELETE remove
 *
 *   superadmin    every project
 *   domain admin  the projects of its domain; a project of another domain is
 *                 404; naming another domain (?domain=, "domain_name") is 403
 *   user          403
 *
 * Members are added and removed by {"user_ids": [...]} or {"emails": [...]}
 * (one of them, 1..1000 entries; emails match case-insensitively). Only users of the project's
 * domain that are not deleted may be added (domain admins: not superadmins either); any other entry
 * is a 400 that names it and adds nothing. Adding a member again or removing a non-member changes
 * nothing (idempotent). */
#ifndef AUTH_PROJECTS_H
#define AUTH_PROJECTS_H

#include "libcommon/svc.h"

void projects_routes(svc *s);

#endif
