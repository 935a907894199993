//go:build linux

// Package faultfs is a failing disk for tests: a FUSE file system that
// serves a directory (a loopback) and, on request, fails the way Linux
// fails when the disk under a file does.
//
//   - LoseWriteBack: the next fsync of a file drops every write made to it
//     since its last successful sync (the file goes back to what it was
//     then, as the disk holds it when the kernel could not write its dirty
//     pages and marked them clean; pages it did not have are zeros, and
//     it keeps its size) and fails with EIO; every other
//     descriptor open on the file then fails its next fsync once, and
//     descriptors opened later see nothing, as Linux reports a failed
//     write-back once to each open file description (errseq, since 4.13).
//     The pages the kernel caches keep the new bytes, as on Linux until
//     memory pressure evicts them (opens keep the cache here; Evict is the
//     memory pressure).
//   - FailRead: reads that touch a chosen byte of a file fail with EIO,
//     after the kernel's cached copy of the file is dropped, so the next
//     read or page fault of a memory map reaches the file system: pread
//     then gets EIO, and a memory-mapped access SIGBUS.
//
// It needs root and /dev/fuse (the mount is made with mount(2), without
// fusermount). POSIX locks are the kernel's own, kept locally for the
// mount, so SQLite's locking works as on a local disk.
package faultfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// pageSize is the unit in which writes are remembered for LoseWriteBack.
const pageSize = 4096

// FS is a mounted failing disk.
type FS struct {
	Dir     string // where it is mounted
	Backing string // the directory whose files it serves: "the disk"
	server  *fuse.Server
	conn    string // the FUSE connection's control directory, for Abort
	mounted atomic.Bool
	root    *node
}

// Mount serves backing at dir (both must exist). Unmount when done.
func Mount(backing, dir string) (*FS, error) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoFUSE, err)
	}
	lr, err := fs.NewLoopbackRoot(backing)
	if err != nil {
		return nil, fmt.Errorf("faultfs: %w", err)
	}
	root := &node{LoopbackNode: lr.(*fs.LoopbackNode)}
	// No caching of names or attributes: each stat reaches the files, so
	// a file's size is always what the loopback holds.
	zero := time.Duration(0)
	server, err := fs.Mount(dir, root, &fs.Options{
		EntryTimeout: &zero, AttrTimeout: &zero, NegativeTimeout: &zero,
		MountOptions: fuse.MountOptions{DirectMountStrict: true, FsName: "faultfs", Name: "faultfs",
			// The kernel drops its cached pages only when told (FailRead), not
			// when a file's modification time changes behind it (LoseWriteBack).
			ExplicitDataCacheControl: true},
	})
	if err != nil {
		return nil, fmt.Errorf("faultfs: mount %s: %w", dir, err)
	}
	if err := server.WaitMount(); err != nil {
		server.Unmount()
		return nil, fmt.Errorf("faultfs: mount %s: %w", dir, err)
	}
	f := &FS{Dir: dir, Backing: backing, server: server, root: root}
	f.mounted.Store(true)
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err == nil {
		// The connection is named by the mount's device number, whose
		// major is 0: its minor.
		minor := st.Dev&0xff | st.Dev>>12&^0xff
		f.conn = fmt.Sprintf("/sys/fs/fuse/connections/%d", minor)
	}
	return f, nil
}

// Abort ends the mount's FUSE connection at once, as writing to its
// abort file in /sys/fs/fuse/connections does: every request waiting for
// the server fails, and later ones too. A process whose own server can no
// longer answer (a page write-back it cannot take, at exit) can then go
// on or end, instead of waiting for ever. For a test's watchdog; Unmount
// is the way out otherwise. Once unmounted, it does nothing.
func (f *FS) Abort() error {
	if !f.mounted.Load() {
		return nil // its connection's number may be another mount's now
	}
	if f.conn == "" {
		return fmt.Errorf("faultfs: %s: its FUSE connection is not known", f.Dir)
	}
	return os.WriteFile(f.conn+"/abort", []byte("1"), 0)
}

// Unmount unmounts the file system; every file on it must be closed.
func (f *FS) Unmount() error {
	var err error
	for range 50 { // the kernel may still hold the last files for a moment
		if err = f.server.Unmount(); err == nil {
			f.mounted.Store(false)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("faultfs: unmount %s: %w", f.Dir, err)
}

// LoseWriteBack makes the next fsync of the file name (in the mount's
// top directory) drop the writes made since its last successful sync and
// fail, as described in the package documentation.
func (f *FS) LoseWriteBack(name string) error {
	s, err := f.state(name)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.loseNext = true
	s.mu.Unlock()
	return nil
}

// WriteBackLost reports whether a LoseWriteBack of name has happened.
func (f *FS) WriteBackLost(name string) bool {
	s, err := f.state(name)
	if err != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lost
}

// FailRead makes every read of name that touches byte off fail with EIO,
// until Heal, and drops the kernel's cached copy of the file.
func (f *FS) FailRead(name string, off int64) error {
	s, err := f.state(name)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.badByte = off
	s.mu.Unlock()
	return f.dropCache(name)
}

// Evict drops the kernel's cached pages of name, mapped ones included, as
// memory pressure would: the next read of each page reaches the file
// system, and after a lost write-back finds what the disk holds.
func (f *FS) Evict(name string) error { return f.dropCache(name) }

// Heal undoes FailRead and LoseWriteBack not yet triggered.
func (f *FS) Heal(name string) error {
	s, err := f.state(name)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.badByte, s.loseNext = -1, false
	s.mu.Unlock()
	return nil
}

// dropCache drops the kernel's cached pages of name, mapped ones included.
func (f *FS) dropCache(name string) error {
	ch := f.root.EmbeddedInode().GetChild(name)
	if ch == nil {
		return fmt.Errorf("faultfs: no file %s", name)
	}
	if errno := ch.NotifyContent(0, 0); errno != 0 {
		return fmt.Errorf("faultfs: drop the cached pages of %s: %w", name, errno)
	}
	return nil
}

// state is the failure state of the file name, which must exist.
func (f *FS) state(name string) (*fileState, error) {
	if _, err := os.Stat(filepath.Join(f.Dir, name)); err != nil { // looks it up, so the node exists
		return nil, fmt.Errorf("faultfs: %w", err)
	}
	ch := f.root.EmbeddedInode().GetChild(name)
	if ch == nil {
		return nil, fmt.Errorf("faultfs: no file %s", name)
	}
	n, ok := ch.Operations().(*node)
	if !ok {
		return nil, fmt.Errorf("faultfs: %s is not a file of the mount", name)
	}
	return n.fileState(n.backingPath("")), nil
}

// node is a loopback node whose opened files are failing-disk files.
type node struct {
	*fs.LoopbackNode
	once  sync.Once
	state *fileState
}

var (
	_ fs.NodeWrapChilder = (*node)(nil)
	_ fs.NodeOpener      = (*node)(nil)
	_ fs.NodeCreater     = (*node)(nil)
)

func (n *node) WrapChild(ctx context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	return &node{LoopbackNode: ops.(*fs.LoopbackNode)}
}

// fileState is the node's failure state; path is its backing file's
// (its place in the tree is not known yet inside Create).
func (n *node) fileState(path string) *fileState {
	n.once.Do(func() {
		n.state = &fileState{path: path,
			badByte: -1, saved: map[int64][]byte{}, savedSize: -1, handles: map[*handle]bool{}}
	})
	return n.state
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fl, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return n.fileState(n.backingPath("")).open(fh), fl | fuse.FOPEN_KEEP_CACHE, 0
}

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	in, fh, fl, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	return in, in.Operations().(*node).fileState(n.backingPath(name)).open(fh), fl | fuse.FOPEN_KEEP_CACHE, 0
}

// backingPath is the backing file of the node's child name, or of the node
// itself if name is "".
func (n *node) backingPath(name string) string {
	return filepath.Join(n.RootData.Path, n.EmbeddedInode().Path(nil), name)
}

// fileState is what a file's handles share: the writes since its last
// successful sync, and the failures armed.
type fileState struct {
	path string // the backing file
	mu   sync.Mutex
	// fd is a descriptor of the backing file of the rig's own, to read
	// and put back pages whatever the handles were opened for.
	fd int
	// saved holds, for each page written since the last successful sync,
	// what the file held there then; savedSize is its size then (-1: not
	// yet known).
	saved     map[int64][]byte
	savedSize int64
	handles   map[*handle]bool // open handles
	loseNext  bool             // LoseWriteBack armed
	lost      bool             // a write-back was lost
	badByte   int64            // FailRead's byte, or -1
}

// open wraps a loopback file handle.
func (s *fileState) open(fh fs.FileHandle) *handle {
	fd, _ := fh.(fs.FilePassthroughFder).PassthroughFd()
	h := &handle{FileHandle: fh, fd: fd, state: s}
	s.mu.Lock()
	s.handles[h] = true
	s.mu.Unlock()
	return h
}

// own is the rig's own descriptor of the backing file. Under s.mu.
func (s *fileState) own() (int, error) {
	if s.fd <= 0 {
		fd, err := syscall.Open(s.path, syscall.O_RDWR|syscall.O_CLOEXEC, 0)
		if err != nil {
			return -1, err
		}
		s.fd = fd
	}
	return s.fd, nil
}

// remember keeps what the file holds in the pages [off, off+n) that were
// not written since the last sync. Under s.mu.
func (s *fileState) remember(off, n int64) syscall.Errno {
	fd, err := s.own()
	if err != nil {
		return fs.ToErrno(err)
	}
	if s.savedSize < 0 {
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			return fs.ToErrno(err)
		}
		s.savedSize = st.Size
	}
	for p := off / pageSize * pageSize; p < off+n; p += pageSize {
		if _, ok := s.saved[p]; ok {
			continue
		}
		buf := make([]byte, pageSize)
		got, err := syscall.Pread(fd, buf, p)
		if err != nil {
			return fs.ToErrno(err)
		}
		s.saved[p] = buf[:got]
	}
	return 0
}

// synced forgets the writes remembered: they are on the disk. Under s.mu.
func (s *fileState) synced() {
	clear(s.saved)
	s.savedSize = -1
}

// loseWrites puts back what the file held at its last sync, and zeros
// where it held nothing, keeping its size: the kernel keeps a file's
// size in memory, and a live memory map of it must not find it shorter.
// Under s.mu.
func (s *fileState) loseWrites() error {
	fd, err := s.own()
	if err != nil {
		return err
	}
	for p, b := range s.saved {
		if len(b) < pageSize {
			b = append(b, make([]byte, pageSize-len(b))...)
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			return err
		}
		if p+int64(len(b)) > st.Size {
			b = b[:max(0, st.Size-p)]
		}
		if _, err := syscall.Pwrite(fd, b, p); err != nil {
			return err
		}
	}
	if err := syscall.Fsync(fd); err != nil {
		return err
	}
	s.synced()
	return nil
}

// handle is one open file description on the mount. It implements no
// locks: the kernel keeps POSIX locks itself for a FUSE file system that
// does not.
type handle struct {
	fs.FileHandle // the loopback's: Release, Flush, Getattr, Lseek, Allocate
	fd            int
	state         *fileState
	// unseen: a write-back was lost while this handle was open; its next
	// fsync reports it.
	unseen bool
}

var (
	_ fs.FileReader    = (*handle)(nil)
	_ fs.FileWriter    = (*handle)(nil)
	_ fs.FileFsyncer   = (*handle)(nil)
	_ fs.FileReleaser  = (*handle)(nil)
	_ fs.FileFlusher   = (*handle)(nil)
	_ fs.FileGetattrer = (*handle)(nil)
	_ fs.FileSetattrer = (*handle)(nil)
)

func (h *handle) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	s := h.state
	s.mu.Lock()
	bad := s.badByte
	s.mu.Unlock()
	if bad >= 0 && bad >= off && bad < off+int64(len(buf)) {
		return nil, syscall.EIO
	}
	n, err := syscall.Pread(h.fd, buf, off)
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	return fuse.ReadResultData(buf[:n]), 0
}

func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	s := h.state
	s.mu.Lock()
	defer s.mu.Unlock()
	if errno := s.remember(off, int64(len(data))); errno != 0 {
		return 0, errno
	}
	n, err := syscall.Pwrite(h.fd, data, off)
	return uint32(n), fs.ToErrno(err)
}

func (h *handle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	s := h.state
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loseNext {
		s.loseNext, s.lost = false, true
		if err := s.loseWrites(); err != nil {
			return fs.ToErrno(err)
		}
		for o := range s.handles {
			if o != h {
				o.unseen = true
			}
		}
		return syscall.EIO
	}
	if err := syscall.Fsync(h.fd); err != nil {
		return fs.ToErrno(err)
	}
	s.synced()
	if h.unseen {
		h.unseen = false
		return syscall.EIO
	}
	return 0
}

func (h *handle) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if size, ok := in.GetSize(); ok {
		s := h.state
		s.mu.Lock()
		var st syscall.Stat_t
		errno := fs.ToErrno(syscall.Fstat(h.fd, &st))
		if errno == 0 && int64(size) < st.Size {
			errno = s.remember(int64(size), st.Size-int64(size))
		} else if errno == 0 {
			errno = s.remember(st.Size, 0)
		}
		s.mu.Unlock()
		if errno != 0 {
			return errno
		}
	}
	return h.FileHandle.(fs.FileSetattrer).Setattr(ctx, in, out)
}

func (h *handle) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	return h.FileHandle.(fs.FileGetattrer).Getattr(ctx, out)
}

func (h *handle) Flush(ctx context.Context) syscall.Errno {
	return h.FileHandle.(fs.FileFlusher).Flush(ctx)
}

func (h *handle) Release(ctx context.Context) syscall.Errno {
	s := h.state
	s.mu.Lock()
	delete(s.handles, h)
	s.mu.Unlock()
	return h.FileHandle.(fs.FileReleaser).Release(ctx)
}

// ErrNoFUSE is returned by Mount where the machine cannot mount FUSE.
var ErrNoFUSE = errors.New("faultfs: FUSE is not available")
