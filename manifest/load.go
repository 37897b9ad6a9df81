package manifest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Load reads, parses and validates the manifest at path, and checks that
// the binary, if it already exists, does not leave the plugin directory
// through a symlink. A missing binary is fine: binaries are often built
// after their manifests are written, and the launcher checks again.
func Load(path string) (*Manifest, Diagnostics) {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	data, err := readManifest(path)
	if err != nil {
		return nil, Diagnostics{{Path: path, Line: 1, Col: 1, Message: err.Error()}}
	}
	return parseFile(path, data)
}

// parseFile is Load after the file is read; Scan shares it.
func parseFile(path string, data []byte) (*Manifest, Diagnostics) {
	m, ds := Parse(path, data)
	if m == nil {
		return nil, ds
	}
	m.Path = path
	if msg := m.binaryEscape(); msg != "" {
		ds = append(ds, locate(path, data, []problem{{key: "plugin.binary", msg: msg}})...)
		ds.Sort()
		return nil, ds
	}
	return m, ds
}

// tooLarge is the message for a manifest over MaxSize.
func tooLarge(size int64) string {
	return fmt.Sprintf("file is %d bytes, over the 1 MiB limit: keep manifests small", size)
}

// readManifest reads a manifest file, refusing special files and oversized
// files before reading them. It works on a raw descriptor: O_NONBLOCK keeps
// opening a FIFO from blocking until the fstat can refuse it, and skipping
// os.File spares the runtime's poller registration and a finalizer, which
// add up over thousands of manifests.
func readManifest(path string) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, readError(err)
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, readError(err)
	}
	switch {
	case st.Mode&syscall.S_IFMT != syscall.S_IFREG:
		return nil, errors.New("not a regular file: a manifest must be a file")
	case st.Size > MaxSize:
		return nil, errors.New(tooLarge(st.Size))
	}
	// A buffer sized from the stat; the spare byte shows whether the file
	// grew in the meantime.
	data := make([]byte, st.Size+1)
	n := 0
	for n < len(data) {
		m, err := syscall.Read(fd, data[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, readError(err)
		}
		if m == 0 {
			break
		}
		n += m
	}
	switch {
	case n > int(st.Size):
		return nil, errors.New("cannot read the manifest: it changed while being read: try again")
	case n < int(st.Size):
		return nil, errors.New("cannot read the manifest: it shrank while being read: try again")
	}
	return data[:n], nil
}

func readError(err error) error {
	return fmt.Errorf("cannot read the manifest: %w", pathless(err))
}

// pathless drops the path from an os error: diagnostics already start with
// it.
func pathless(err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err
	}
	return err
}

// Dir is the plugin directory: the directory holding the manifest.
func (m *Manifest) Dir() string { return filepath.Dir(m.Path) }

// BinaryPath is the plugin binary's path, absolute when the manifest was
// loaded from a file.
func (m *Manifest) BinaryPath() string { return filepath.Join(m.Dir(), m.Plugin.Binary) }

// binaryEscape walks the binary's path inside the plugin directory and
// returns a message when the binary, or a directory on the way, is a
// symlink that resolves outside the plugin directory. Only existing
// symlinks cost more than one lstat per path element.
func (m *Manifest) binaryEscape() string {
	dir := m.Dir()
	rel := filepath.Clean(m.Plugin.Binary)
	realDir := ""
	for i := 0; i <= len(rel); i++ {
		if i < len(rel) && rel[i] != filepath.Separator {
			continue
		}
		p := filepath.Join(dir, rel[:i])
		st, err := os.Lstat(p)
		if err != nil {
			return "" // missing: nothing to check yet
		}
		if st.Mode()&os.ModeSymlink == 0 {
			continue
		}
		target, err := filepath.EvalSymlinks(p)
		if err != nil {
			return "" // dangling: the binary does not exist yet
		}
		if realDir == "" {
			if realDir, err = filepath.EvalSymlinks(dir); err != nil {
				return ""
			}
		}
		if target != realDir && !strings.HasPrefix(target, realDir+string(filepath.Separator)) {
			return fmt.Sprintf("plugin.binary %q resolves outside the plugin directory, to %s, through the symlink %s: "+
				"put the binary itself inside the plugin directory", m.Plugin.Binary, target, rel[:i])
		}
	}
	return ""
}
