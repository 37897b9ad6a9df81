package launch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/nexus-eval/nexus/host/component"
	"github.com/nexus-eval/nexus/host/integrity"
	"github.com/nexus-eval/nexus/manifest"
)

// ErrChecksum: the binary's sha256 differs from its pin.
var ErrChecksum = integrity.ErrChecksum

// checkBinary makes sure bin exists and is an executable regular file,
// saying how to fix it when not.
func checkBinary(m *manifest.Manifest, bin string) error {
	fi, err := os.Stat(bin)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("plugin %q: %w: binary %s does not exist: build it (for bundled plugins: `make plugins`; otherwise `go build -o %s` in the plugin's source) or fix plugin.binary in %s",
			m.Plugin.Name, component.ErrLaunch, bin, bin, m.Path)
	case err != nil:
		return fmt.Errorf("plugin %q: %w: %v", m.Plugin.Name, component.ErrLaunch, err)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("plugin %q: %w: binary %s is not a regular file (mode %s)", m.Plugin.Name, component.ErrLaunch, bin, fi.Mode())
	case fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("plugin %q: %w: binary %s is not executable (mode %s): run `chmod +x %s`", m.Plugin.Name, component.ErrLaunch, bin, fi.Mode().Perm(), bin)
	}
	return nil
}

// pinError explains a refused binary: a checksum mismatch names both
// digests and the fix.
func pinError(m *manifest.Manifest, bin string, err error) error {
	var ce *integrity.ChecksumError
	if errors.As(err, &ce) {
		return fmt.Errorf("plugin %q: %w: %w: it is pinned to sha256 %s (in %s or the lock file) but binary %s has sha256 %s: rebuild the pinned binary, or update the pin (nexus-host plugins lock)",
			m.Plugin.Name, component.ErrLaunch, ErrChecksum, ce.Want, m.Path, bin, ce.Got)
	}
	return fmt.Errorf("plugin %q: %w: %w", m.Plugin.Name, component.ErrLaunch, err)
}

// execPath is what to execute for a verified binary: its descriptor, so
// the checked file is the one that runs. A script cannot run that way (its
// interpreter opens the path, after the descriptor is gone), so scripts run
// by path.
func execPath(v *integrity.Verified) string {
	var head [2]byte
	if n, _ := v.File().ReadAt(head[:], 0); n == 2 && string(head[:]) == "#!" {
		return v.Path()
	}
	return v.ExecPath()
}

// FileSHA256 returns the lower-case hex sha256 of the file at path.
func FileSHA256(path string) (string, error) { return integrity.FileSHA256(path) }
