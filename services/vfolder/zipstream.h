/* zipstream.h: a directory as a zip archive, produced while it is sent.
 *
 * Our own minimal writer (PKWARE APPNOTE 6.3): entries are stored
 * (method 0), each file's CRC-32 and sizes follow its data in a data
 * descriptor (general purpose bit 3), so nothing is buffered but one
 * header; the central directory is built from what was actually sent. Zip64
 * records appear when a file, the archive or the entry count needs them.
 * Names are UTF-8 (bit 11). Only directories and regular files are
 * archived; symlinks and special files are left out. Files are opened
 * confined to the archived directory (files.h), O_NOFOLLOW|O_NONBLOCK, so an
 * entry swapped for a symlink or a FIFO during the walk is skipped, never
 * followed or waited on. A file that shrank is archived as it is now; one
 * that grew is cut at the size it had when the walk saw it. */
#ifndef VFOLDER_ZIPSTREAM_H
#define VFOLDER_ZIPSTREAM_H

#include "libcommon/common.h"

#include <stdint.h>

typedef struct vf_zip vf_zip;

/* Walk the directory dirfd (taken over: closed by vf_zip_free) and prepare
 * the archive. NULL (*errnum: the errno value) when the walk fails.
 * max_entries bounds the walk (E2BIG past it). */
vf_zip *vf_zip_new(int dirfd, size_t max_entries, int *errnum);
/* Entries found and the bytes of their files (as the walk saw them). */
size_t vf_zip_entries(const vf_zip *z);
uint64_t vf_zip_file_bytes(const vf_zip *z);
/* The next bytes of the archive into buf: *n of them (0 at its end). False
 * on a read error (the archive is then incomplete: the connection should be
 * cut). */
bool vf_zip_read(vf_zip *z, char *buf, size_t max, size_t *n) TS_MUST_CHECK;
void vf_zip_free(vf_zip *z);

#endif
