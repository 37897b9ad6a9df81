package manifest

import (
	"cmp"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
)

// Root is a directory to look for plugins in.
type Root struct {
	Dir string
	// Explicit roots were named by the user ($NEXUS_PLUGIN_PATH, --plugins),
	// so a missing one is reported; default roots may well not exist.
	Explicit bool
}

// DefaultRoots returns the bundled plugin directories under cwd, then each
// directory of pluginPath (the value of $NEXUS_PLUGIN_PATH, a list separated
// like $PATH).
func DefaultRoots(cwd, pluginPath string) []Root {
	roots := []Root{
		{Dir: filepath.Join(cwd, "plugins", "agents")},
		{Dir: filepath.Join(cwd, "plugins", "tools")},
		{Dir: filepath.Join(cwd, "plugins", "tasks")},
	}
	for _, dir := range filepath.SplitList(pluginPath) {
		if dir != "" {
			roots = append(roots, Root{Dir: dir, Explicit: true})
		}
	}
	return roots
}

// Scan finds and loads the manifests under roots. A root holding a
// nexus.toml is itself a plugin directory; otherwise each of its immediate
// subdirectories holding one is. A plugin directory reached twice is loaded
// once. Broken manifests are reported and left out, and never stop the scan.
// Manifests come back sorted by path and diagnostics by position, so the
// result does not depend on scheduling.
func Scan(roots []Root) ([]*Manifest, Diagnostics) {
	files, ds := pluginFiles(roots)

	// Loading is where the time goes (reading and decoding each file), so
	// only that is spread over the CPUs; listing directories is cheap.
	ms := make([]*Manifest, len(files))
	fileDs := make([]Diagnostics, len(files))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(files)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(files); i = int(next.Add(1) - 1) {
				ms[i], fileDs[i] = loadCandidate(files[i])
			}
		})
	}
	wg.Wait()

	for _, fds := range fileDs {
		ds = append(ds, fds...)
	}
	ds.Sort()
	ms = slices.DeleteFunc(ms, func(m *Manifest) bool { return m == nil })
	slices.SortFunc(ms, func(a, b *Manifest) int { return cmp.Compare(a.Path, b.Path) })
	return ms, ds
}

// pluginFiles lists the manifest files to load, each once.
func pluginFiles(roots []Root) ([]string, Diagnostics) {
	var files []string
	var ds Diagnostics
	seen := map[string]bool{} // cleaned absolute directories
	add := func(dir string) {
		if !seen[dir] {
			seen[dir] = true
			files = append(files, filepath.Join(dir, FileName))
		}
	}
	seenRoot := map[string]bool{}
	for _, r := range roots {
		dir, err := filepath.Abs(r.Dir)
		if err != nil || seenRoot[dir] {
			continue
		}
		seenRoot[dir] = true
		entries, err := os.ReadDir(dir)
		if err != nil {
			if r.Explicit || !errors.Is(err, fs.ErrNotExist) {
				ds = append(ds, Diagnostic{Path: dir, Line: 1, Col: 1,
					Message: "cannot read plugin root: " + pathless(err).Error() + ": fix $NEXUS_PLUGIN_PATH or --plugins"})
			}
			continue
		}
		if slices.ContainsFunc(entries, func(e fs.DirEntry) bool { return e.Name() == FileName }) {
			add(dir)
			continue
		}
		for _, e := range entries {
			// A symlink may lead to a directory; loading will tell.
			if e.IsDir() || e.Type()&fs.ModeSymlink != 0 {
				add(filepath.Join(dir, e.Name()))
			}
		}
	}
	return files, ds
}

// loadCandidate loads the manifest of a possible plugin directory; a
// directory without one is simply not a plugin.
func loadCandidate(path string) (*Manifest, Diagnostics) {
	data, err := readManifest(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return nil, nil
	case err != nil:
		return nil, Diagnostics{{Path: path, Line: 1, Col: 1, Message: err.Error()}}
	}
	return parseFile(path, data)
}
