package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/nexus-eval/nexus/manifest"
	"github.com/nexus-eval/nexus/sdk"
)

func newPluginsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugins",
		Short: "Manage plugin directories",
	}
	cmd.AddCommand(newManifestCmd(), newLockCmd(g), newVerifyCmd(g))
	return cmd
}

func newManifestCmd() *cobra.Command {
	var binary string
	var stdout bool
	cmd := &cobra.Command{
		Use:   "manifest DIR",
		Short: "Write DIR/nexus.toml from what the plugin binary says it serves",
		Long: "Run the plugin binary with " + sdk.ManifestFlag + " and write its manifest to DIR/nexus.toml.\n" +
			"The binary is --binary, else plugin.binary of an existing DIR/nexus.toml, else DIR/<name of DIR>.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			bin, err := manifestBinary(dir, binary)
			if err != nil {
				return err
			}
			data, err := runManifestFlag(cmd.Context(), bin)
			if err != nil {
				return err
			}
			if stdout {
				_, err := cmd.OutOrStdout().Write(data)
				return err
			}
			path := filepath.Join(dir, manifest.FileName)
			if err := writeFileAtomic(path, data); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", path)
			return nil
		},
	}
	cmd.Flags().StringVar(&binary, "binary", "", "plugin binary `PATH` (default: see above)")
	cmd.Flags().BoolVar(&stdout, "stdout", false, "print the manifest instead of writing it")
	return cmd
}

// manifestBinary picks the binary to ask for its manifest.
func manifestBinary(dir, flag string) (string, error) {
	if flag != "" {
		return filepath.Abs(flag)
	}
	if m, diags := manifest.Load(filepath.Join(dir, manifest.FileName)); m != nil && !diags.HasErrors() {
		return m.BinaryPath(), nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(abs, filepath.Base(abs))
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("no plugin binary found at %s: build it there or pass --binary PATH", bin)
	}
	return bin, nil
}

// runManifestFlag runs bin with the manifest flag and checks what it
// prints before anything is written.
func runManifestFlag(ctx context.Context, bin string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	c := exec.CommandContext(ctx, bin, sdk.ManifestFlag)
	c.Stdout, c.Stderr = &out, &errOut
	c.Env = []string{"PATH=" + os.Getenv("PATH")}
	if err := c.Run(); err != nil {
		return nil, fmt.Errorf("run %s %s: %w: %s (is it a Nexus plugin built with the sdk?)", bin, sdk.ManifestFlag, err, bytes.TrimSpace(errOut.Bytes()))
	}
	if _, diags := manifest.Parse(bin+" "+sdk.ManifestFlag, out.Bytes()); diags.HasErrors() {
		return nil, fmt.Errorf("%s printed an invalid manifest:\n%w", bin, diags.Err())
	}
	return out.Bytes(), nil
}

// writeFileAtomic replaces path so a reader never sees half a manifest.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".nexus-*.toml")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
