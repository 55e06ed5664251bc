/* home_path.h: a path relative to a user's home directory, as a dotfile
 * names its file (Backend.AI's /user-config/dotfiles): 1 to HOME_PATH_MAX
 * bytes, not absolute (no leading "/" or "~"), no control character, no
 * empty, "." or ".." segment. tessera-auth checks it when a dotfile is
 * stored; tessera-registry again when the file goes into a session
 * (CreateKernel.home_files), so that only such paths reach an agent. */
#ifndef TESSERA_HOME_PATH_H
#define TESSERA_HOME_PATH_H

#define HOME_PATH_MAX 255

/* NULL when path is acceptable, else why not (a constant, in words). */
const char *home_path_problem(const char *path);

#endif
