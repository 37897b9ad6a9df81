package launch

import (
	"os"
	"sync"
	"syscall"
)

// fileKey identifies one version of a file without reading it: a rebuilt
// or replaced binary changes its inode, size, mtime or ctime.
type fileKey struct {
	dev, ino    uint64
	size        int64
	mtime, ctim int64
}

func keyOf(fi os.FileInfo) (fileKey, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileKey{}, false
	}
	return fileKey{
		dev: uint64(st.Dev), ino: st.Ino, size: st.Size,
		mtime: st.Mtim.Nano(), ctim: st.Ctim.Nano(),
	}, true
}

// digests caches binary hashes by file version, so relaunching a plugin
// does not hash its binary again.
var digests sync.Map // fileKey -> string

// cachedSHA256 returns the sha256 of path, hashing it only when this
// version of the file was not hashed before.
func cachedSHA256(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	key, ok := keyOf(fi)
	if ok {
		if d, hit := digests.Load(key); hit {
			return d.(string), nil
		}
	}
	d, err := FileSHA256(path)
	if err != nil {
		return "", err
	}
	if ok {
		digests.Store(key, d)
	}
	return d, nil
}

// digest is a binary's sha256: the verified pin, or computed in the
// background on first demand. Hashing at every launch would compete with
// the launch itself for the CPU (a 20 MB binary takes over 10 ms).
type digest struct {
	start func() // starts the hash once; nil for a pin
	once  sync.Once
	done  chan struct{}
	value string
}

func pinnedDigest(d string) *digest {
	dg := &digest{done: make(chan struct{}), value: d}
	close(dg.done)
	return dg
}

func lazyDigest(path string) *digest {
	dg := &digest{done: make(chan struct{})}
	dg.start = func() {
		go func() {
			dg.value, _ = cachedSHA256(path)
			close(dg.done)
		}()
	}
	return dg
}

func (d *digest) kick() {
	if d.start != nil {
		d.once.Do(d.start)
	}
}

// wait returns the digest, computing it if needed.
func (d *digest) wait() string {
	d.kick()
	<-d.done
	return d.value
}

// ready returns the digest if it is known, and starts computing it if not.
func (d *digest) ready() (string, bool) {
	d.kick()
	select {
	case <-d.done:
		return d.value, true
	default:
		return "", false
	}
}
