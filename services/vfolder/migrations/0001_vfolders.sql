-- Virtual folders: the folders, invitations, per-user permissions (accepted
-- invitations and project-folder overrides) and quota scopes. Users and
-- projects live in tessera-auth: ids here are references by value only.

CREATE TABLE vfolders (
    id              uuid PRIMARY KEY,
    name            text NOT NULL CHECK (length(name) BETWEEN 1 AND 64),
    host            text NOT NULL CHECK (length(host) BETWEEN 1 AND 64),
    ownership_type  text NOT NULL CHECK (ownership_type IN ('user', 'group')),
    user_id         uuid,           -- owner (ownership_type 'user')
    group_id        uuid,           -- owning project (ownership_type 'group')
    creator_id      uuid NOT NULL,
    domain_name     text NOT NULL,
    usage_mode      text NOT NULL DEFAULT 'general' CHECK (usage_mode IN ('general', 'data', 'model')),
    permission      text NOT NULL DEFAULT 'rw' CHECK (permission IN ('ro', 'rw', 'wd')),
    cloneable       boolean NOT NULL DEFAULT false,
    status          text NOT NULL DEFAULT 'ready'
                    CHECK (status IN ('ready', 'cloning', 'deleting', 'trash', 'purging', 'purged')),
    quota_bytes     bigint NOT NULL DEFAULT 0 CHECK (quota_bytes >= 0),   -- 0 = none of its own
    usage_bytes     bigint NOT NULL DEFAULT 0 CHECK (usage_bytes >= 0),   -- our accounting
    quota_scope_id  text NOT NULL,  -- 'user:<uuid>' or 'project:<uuid>'
    created_at      timestamptz NOT NULL DEFAULT now(),
    trashed_at      timestamptz,
    purged_at       timestamptz,
    CHECK ((ownership_type = 'user' AND user_id IS NOT NULL AND group_id IS NULL)
        OR (ownership_type = 'group' AND group_id IS NOT NULL AND user_id IS NULL))
);
-- A name is unique per owner among folders that are not in the trash or gone.
CREATE UNIQUE INDEX vfolders_user_name ON vfolders (user_id, name)
    WHERE ownership_type = 'user' AND status NOT IN ('trash', 'purging', 'purged');
CREATE UNIQUE INDEX vfolders_group_name ON vfolders (group_id, name)
    WHERE ownership_type = 'group' AND status NOT IN ('trash', 'purging', 'purged');
CREATE INDEX vfolders_trash ON vfolders (trashed_at) WHERE status = 'trash';
CREATE INDEX vfolders_scope ON vfolders (quota_scope_id);

CREATE TABLE invitations (
    id             uuid PRIMARY KEY,
    vfolder_id     uuid NOT NULL REFERENCES vfolders(id) ON DELETE CASCADE,
    inviter_id     uuid NOT NULL,
    inviter_email  text NOT NULL,
    invitee_email  text NOT NULL CHECK (length(invitee_email) BETWEEN 3 AND 254),
    invitee_id     uuid,
    perm           text NOT NULL CHECK (perm IN ('ro', 'rw', 'wd')),
    state          text NOT NULL DEFAULT 'pending'
                   CHECK (state IN ('pending', 'accepted', 'rejected', 'canceled')),
    created_at     timestamptz NOT NULL DEFAULT now(),
    modified_at    timestamptz NOT NULL DEFAULT now()
);
-- One pending invitation per folder and invitee.
CREATE UNIQUE INDEX invitations_pending ON invitations (vfolder_id, lower(invitee_email))
    WHERE state = 'pending';
CREATE INDEX invitations_invitee ON invitations (lower(invitee_email), state);

-- Who holds what on a folder besides its owner: accepted invitations (user
-- folders) and per-user overrides of project folders (share/unshare).
CREATE TABLE permissions (
    vfolder_id  uuid NOT NULL REFERENCES vfolders(id) ON DELETE CASCADE,
    user_id     uuid NOT NULL,
    perm        text NOT NULL CHECK (perm IN ('ro', 'rw', 'wd')),
    source      text NOT NULL CHECK (source IN ('invitation', 'share')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (vfolder_id, user_id)
);
CREATE INDEX permissions_user ON permissions (user_id);

-- Quota scopes: the sum of usage_bytes of the scope's folders, against the
-- owner's limit (user policy max_quota_scope_size; 0 = unlimited).
CREATE TABLE quota_scopes (
    id           text PRIMARY KEY,   -- 'user:<uuid>' or 'project:<uuid>'
    limit_bytes  bigint NOT NULL DEFAULT 0 CHECK (limit_bytes >= 0),
    usage_bytes  bigint NOT NULL DEFAULT 0 CHECK (usage_bytes >= 0),
    modified_at  timestamptz NOT NULL DEFAULT now()
);
