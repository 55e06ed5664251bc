/* unpack.h: one image layer (a tar stream, optionally gzip/zstd/xz/bzip2
 * compressed) into a directory that overlayfs uses as a lower layer.
 *
 * Safety: every entry is created relative to the layer root through file
 * descriptors opened component by component with O_NOFOLLOW, so nothing is
 * ever written through a symlink (planted earlier in the same layer or not).
 * Absolute paths are made relative; a '..' component, a parent that is a
 * symlink and a hard link to a target outside the root are refused, naming the
 * entry. Symlinks are created as they are (their targets are resolved in the
 * container, never here).
 *
 * OCI whiteouts become overlayfs whiteouts: ".wh.<name>" -> a character device
 * 0/0 named <name>; ".wh..wh..opq" -> the directory gets the xattr
 * trusted.overlay.opaque=y. Device nodes and sockets in a layer are skipped with
 * a warning; xattrs of the overlay namespaces in a layer are ignored. Modes,
 * owners (when running as root) and mtimes are kept; directory metadata is
 * applied after all entries.
 *
 * Owners can be shifted for a user namespace (userns.h): uid and gid N of an
 * entry become base + N on disk, and so do the directories made for entries
 * whose parents the tar does not list, and the layer root. An id past the
 * mapping (N >= count) becomes the mapping's nobody (65534, or count - 1
 * when smaller), with a warning saying how many. */
#ifndef AGENT_UNPACK_H
#define AGENT_UNPACK_H

#include "libcommon/common.h"
#include "services/agent/digest.h"

typedef struct unpack_stats {
    char diff_id[DIGEST_STRLEN]; /* digest of the uncompressed tar stream */
    int64_t uncompressed_bytes;
    int64_t entries;
    int64_t skipped;     /* device nodes, sockets */
    int64_t ids_clamped; /* owners (uids, gids) past a shift's count */
} unpack_stats;

/* Owner shift of an unpack: ids 0..count-1 become base..base+count-1 on
 * disk. NULL or count 0: owners as the layer says. */
typedef struct unpack_ids {
    uint32_t base;
    uint32_t count;
} unpack_ids;

/* Unpack the layer in file blob_path into dest_dir: into a fresh temporary
 * directory under tmp_parent (same file system as dest_dir), then rename. When
 * expected_diff_id is given, the uncompressed stream must have that digest or
 * nothing is kept. dest_dir existing already (another pull unpacked the same
 * layer first) is success. stats may be NULL. */
bool unpack_layer(const char *blob_path, const char *dest_dir, const char *tmp_parent,
                  const char *expected_diff_id, const unpack_ids *ids, unpack_stats *stats,
                  ts_err *err) TS_MUST_CHECK;

/* Unpack into the existing directory root_fd (no temporary, no rename). */
bool unpack_into(int root_fd, const char *blob_path, const unpack_ids *ids, unpack_stats *stats,
                 ts_err *err) TS_MUST_CHECK;

/* rm -rf that never follows symlinks nor crosses mount points; true when path
 * is gone afterwards (or never existed). */
bool unpack_remove_tree(const char *path) TS_MUST_CHECK;

#endif
