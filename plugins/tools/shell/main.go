// Command shell is a Nexus tool plugin serving RUNTIME tools that work in
// the execution's work dir: run_command (sh -c, with a timeout and capped
// output), read_file, write_file and list_files. The host starts the binary
// inside the execution's runtime with the work dir as its working directory,
// so the work dir is the process's working directory at start. Every path is
// relative to the work dir and confined to it: absolute paths, ".." escapes
// and symlinks that lead outside are refused (the files are reached through
// an os.Root).
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nexus-eval/nexus/sdk"
)

const (
	defaultTimeout = 30 * time.Second
	maxTimeout     = 600 * time.Second
	// maxOutput caps stdout and stderr of run_command each, and read_file.
	maxOutput = 1 << 20
	// maxFiles caps list_files.
	maxFiles = 10000
)

// workDir is the tools' work dir and the root that confines their paths.
type workDir struct {
	dir  string
	root *os.Root
}

func openWorkDir(dir string) (*workDir, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &workDir{dir: dir, root: root}, nil
}

type runIn struct {
	Command  string  `json:"command" jsonschema:"a shell command, run by sh -c in the work dir"`
	TimeoutS float64 `json:"timeout_s,omitempty" jsonschema:"seconds before the command and everything it started are killed; default 30, at most 600"`
}

type runOut struct {
	ExitCode  int    `json:"exit_code" jsonschema:"the exit status; 128+N when killed by signal N"`
	Stdout    string `json:"stdout" jsonschema:"standard output, at most 1 MiB"`
	Stderr    string `json:"stderr" jsonschema:"standard error, at most 1 MiB"`
	TimedOut  bool   `json:"timed_out" jsonschema:"the command ran past its timeout and was killed"`
	Truncated bool   `json:"truncated" jsonschema:"stdout or stderr was longer than 1 MiB and was cut"`
}

// capped keeps the first maxOutput bytes written to it and drops the rest.
type capped struct {
	buf       bytes.Buffer
	truncated bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := maxOutput - c.buf.Len(); len(p) > room {
		c.truncated = true
		c.buf.Write(p[:max(room, 0)])
	} else {
		c.buf.Write(p)
	}
	return len(p), nil
}

// runCommand runs in.Command with sh -c in its own process group. When sh
// exits, whatever it left running in the group is killed too, so nothing
// outlives the call; at the timeout the whole group is killed.
func (w *workDir) runCommand(ctx context.Context, in runIn) (runOut, error) {
	if strings.TrimSpace(in.Command) == "" {
		return runOut{}, sdk.Errorf(sdk.CodeInvalidInput, "command is empty: give a shell command")
	}
	timeout := defaultTimeout
	switch {
	case in.TimeoutS < 0 || in.TimeoutS > maxTimeout.Seconds():
		return runOut{}, sdk.Errorf(sdk.CodeInvalidInput, "timeout_s %v is out of range: give 0 < timeout_s <= %v (or leave it out for %v)", in.TimeoutS, maxTimeout.Seconds(), defaultTimeout.Seconds())
	case in.TimeoutS > 0:
		timeout = time.Duration(in.TimeoutS * float64(time.Second))
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var stdout, stderr capped
	cmd := exec.CommandContext(tctx, "/bin/sh", "-c", in.Command)
	cmd.Dir = w.dir
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	// A background child that keeps the output pipes open would hold Wait
	// until the timeout; WaitDelay lets Wait return, and the group is
	// killed below.
	cmd.WaitDelay = 100 * time.Millisecond
	if err := cmd.Start(); err != nil {
		return runOut{}, fmt.Errorf("start sh: %w", err)
	}
	pid := cmd.Process.Pid
	err := cmd.Wait()
	_ = killGroup(pid)

	if ctx.Err() != nil {
		return runOut{}, ctx.Err()
	}
	out := runOut{
		Stdout:    stdout.buf.String(),
		Stderr:    stderr.buf.String(),
		TimedOut:  errors.Is(tctx.Err(), context.DeadlineExceeded),
		Truncated: stdout.truncated || stderr.truncated,
	}
	var ee *exec.ExitError
	switch {
	case err == nil, errors.Is(err, exec.ErrWaitDelay):
	case errors.As(err, &ee):
		out.ExitCode = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			out.ExitCode = 128 + int(ws.Signal())
		}
	default:
		return runOut{}, fmt.Errorf("run sh: %w", err)
	}
	return out, nil
}

func killGroup(pgid int) error {
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// rel checks a path given by the caller: relative to the work dir and
// lexically inside it. Symlinks are the os.Root's business.
func rel(path string, allowRoot bool) (string, error) {
	switch {
	case path == "" && allowRoot:
		return ".", nil
	case path == "":
		return "", sdk.Errorf(sdk.CodeInvalidInput, "path is empty: give a path relative to the work dir")
	case filepath.IsAbs(path):
		return "", sdk.Errorf(sdk.CodeInvalidInput, "path %q is absolute: give a path relative to the work dir", path)
	case !filepath.IsLocal(path):
		return "", sdk.Errorf(sdk.CodeInvalidInput, "path %q escapes the work dir: give a path inside it", path)
	}
	p := filepath.Clean(path)
	if p == "." && !allowRoot {
		return "", sdk.Errorf(sdk.CodeInvalidInput, "path %q is the work dir itself: give a file path", path)
	}
	return p, nil
}

// fileErr turns an error of the os.Root into a domain error when the
// caller's path is at fault.
func fileErr(path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return sdk.Errorf("not_found", "%s: no such file or directory", path)
	case errors.Is(err, fs.ErrPermission):
		return sdk.Errorf("permission_denied", "%s: permission denied", path)
	case strings.Contains(err.Error(), "path escapes from parent"):
		return sdk.Errorf(sdk.CodeInvalidInput, "path %q escapes the work dir (through a symlink): give a path inside it", path)
	case errors.Is(err, syscall.ENOTDIR):
		return sdk.Errorf(sdk.CodeInvalidInput, "%s: a parent of the path is not a directory", path)
	case errors.Is(err, syscall.EISDIR):
		return sdk.Errorf(sdk.CodeInvalidInput, "%s is a directory: use list_files", path)
	}
	return err
}

type readIn struct {
	Path string `json:"path" jsonschema:"the file, relative to the work dir"`
}

type readOut struct {
	Content string `json:"content" jsonschema:"the file's content"`
}

func (w *workDir) readFile(_ context.Context, in readIn) (readOut, error) {
	p, err := rel(in.Path, false)
	if err != nil {
		return readOut{}, err
	}
	f, err := w.root.Open(p)
	if err != nil {
		return readOut{}, fileErr(in.Path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return readOut{}, fileErr(in.Path, err)
	}
	if fi.IsDir() {
		return readOut{}, sdk.Errorf(sdk.CodeInvalidInput, "%s is a directory: use list_files", in.Path)
	}
	if fi.Size() > maxOutput {
		return readOut{}, sdk.Errorf("too_large", "%s is %d bytes, more than read_file's %d: read a part with run_command (head, sed -n)", in.Path, fi.Size(), maxOutput)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(f); err != nil {
		return readOut{}, fileErr(in.Path, err)
	}
	return readOut{Content: buf.String()}, nil
}

type writeIn struct {
	Path    string `json:"path" jsonschema:"the file, relative to the work dir; missing parent directories are created"`
	Content string `json:"content" jsonschema:"the new content; the file is replaced"`
}

type writeOut struct {
	Bytes int `json:"bytes" jsonschema:"how many bytes were written"`
}

func (w *workDir) writeFile(_ context.Context, in writeIn) (writeOut, error) {
	p, err := rel(in.Path, false)
	if err != nil {
		return writeOut{}, err
	}
	if dir := filepath.Dir(p); dir != "." {
		if err := w.root.MkdirAll(dir, 0o755); errors.Is(err, fs.ErrExist) {
			return writeOut{}, sdk.Errorf(sdk.CodeInvalidInput, "%s: a parent of the path is not a directory", in.Path)
		} else if err != nil {
			return writeOut{}, fileErr(in.Path, err)
		}
	}
	if err := w.root.WriteFile(p, []byte(in.Content), 0o644); err != nil {
		return writeOut{}, fileErr(in.Path, err)
	}
	return writeOut{Bytes: len(in.Content)}, nil
}

type listIn struct {
	Path string `json:"path,omitempty" jsonschema:"the directory to list recursively, relative to the work dir; default the work dir"`
}

type fileInfo struct {
	Path string `json:"path" jsonschema:"relative to the work dir"`
	Size int64  `json:"size" jsonschema:"in bytes"`
	Dir  bool   `json:"dir" jsonschema:"a directory"`
}

type listOut struct {
	Files     []fileInfo `json:"files" jsonschema:"every file and directory under path, in lexical order; symlinks are listed, not followed"`
	Truncated bool       `json:"truncated" jsonschema:"there were more than 10000 entries and the rest were left out"`
}

func (w *workDir) listFiles(_ context.Context, in listIn) (listOut, error) {
	p, err := rel(in.Path, true)
	if err != nil {
		return listOut{}, err
	}
	// Resolve the starting point through the root, so a symlink cannot
	// lead the walk outside.
	if _, err := w.root.Stat(p); err != nil {
		return listOut{}, fileErr(in.Path, err)
	}
	out := listOut{Files: []fileInfo{}}
	err = fs.WalkDir(w.root.FS(), p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == p && d.IsDir() {
			return nil
		}
		if len(out.Files) == maxFiles {
			out.Truncated = true
			return fs.SkipAll
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out.Files = append(out.Files, fileInfo{Path: path, Size: fi.Size(), Dir: d.IsDir()})
		return nil
	})
	if err != nil {
		return listOut{}, fileErr(in.Path, err)
	}
	return out, nil
}

func main() {
	dir, err := os.Getwd()
	if err == nil {
		var w *workDir
		if w, err = openWorkDir(dir); err == nil {
			serve(w)
			return
		}
	}
	fmt.Fprintf(os.Stderr, "shell: open the work dir: %v\n", err)
	os.Exit(1)
}

func serve(w *workDir) {
	sdk.Serve(sdk.Plugin{Name: "shell", Version: "0.1.0", Description: "Runtime tools working in the execution's work dir: run a shell command, read, write and list files"},
		sdk.Tool("run_command", "Runs a shell command with sh -c in the work dir and returns its exit code, stdout and stderr; killed at its timeout", w.runCommand, sdk.Runtime(), sdk.WithTags("shell")),
		sdk.Tool("read_file", "Reads a file of the work dir", w.readFile, sdk.Runtime(), sdk.WithTags("files")),
		sdk.Tool("write_file", "Writes a file of the work dir, creating missing parent directories", w.writeFile, sdk.Runtime(), sdk.WithTags("files")),
		sdk.Tool("list_files", "Lists the files under a directory of the work dir, recursively", w.listFiles, sdk.Runtime(), sdk.WithTags("files")),
	)
}
