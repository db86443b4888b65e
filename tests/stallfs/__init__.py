"""A FUSE filesystem whose reads never return: a stalled network mount, for real.

An NFS server that stops answering leaves every read() on its mount blocked in the kernel,
where no timeout of ours reaches; FUSE gives the same kernel behaviour without a server:
`read` below sleeps (until the filesystem is unmounted). Only the files named in STALLED
stall; every other file answers, so a test sees exactly which probe overran.

    python -m tests.stallfs MOUNTPOINT     # foreground; unmount (umount -l) to stop

Needs /dev/fuse, fuse3's fusermount3 and the mfusepy package (.ci/setup-fuse.sh).
"""
