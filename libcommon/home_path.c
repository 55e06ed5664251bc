/* home_path.c: paths relative to a home directory (home_path.h). */
#include "libcommon/home_path.h"

#include <string.h>

const char *home_path_problem(const char *path)
{
    size_t n = path ? strlen(path) : 0;
    if (n == 0 || n > HOME_PATH_MAX) return "path must have 1 to 255 bytes";
    if (path[0] == '/' || path[0] == '~') return "path must be relative to the home directory";
    for (const char *s = path; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) return "path must not hold control characters";
    for (const char *seg = path; seg;) {
        const char *slash = strchr(seg, '/');
        size_t len = slash ? (size_t)(slash - seg) : strlen(seg);
        if (len == 0) return "path must not hold empty segments (\"//\" or a trailing \"/\")";
        if ((len == 1 && seg[0] == '.') || (len == 2 && seg[0] == '.' && seg[1] == '.'))
            return "path must not hold \".\" or \"..\" segments";
        seg = slash ? slash + 1 : NULL;
    }
    return NULL;
}
