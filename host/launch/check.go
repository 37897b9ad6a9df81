package launch

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/nexus-eval/nexus/host/component"
	"github.com/nexus-eval/nexus/manifest"
)

// ErrChecksum: the binary's sha256 differs from its pin.
var ErrChecksum = errors.New("sha256 mismatch")

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

// verifyPin hashes bin and compares it with the manifest's sha256.
func verifyPin(m *manifest.Manifest, bin string) (string, error) {
	got, err := cachedSHA256(bin)
	if err != nil {
		return "", fmt.Errorf("plugin %q: %w: hash binary: %v", m.Plugin.Name, component.ErrLaunch, err)
	}
	if got != m.Plugin.SHA256 {
		return "", fmt.Errorf("plugin %q: %w: %w: %s pins sha256 %s but binary %s has sha256 %s: rebuild the pinned binary or update the pin",
			m.Plugin.Name, component.ErrLaunch, ErrChecksum, m.Path, m.Plugin.SHA256, bin, got)
	}
	return got, nil
}

// FileSHA256 returns the lower-case hex sha256 of the file at path.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
