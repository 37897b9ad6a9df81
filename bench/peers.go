// This file holds the peers Nexus is measured against besides plain stock
// go-plugin (stock.go): an in-process call, an MCP server over stdio
// (bench/mcpecho, official Go SDK), stock go-plugin with SecureConfig, a
// pinned Nexus plugin, and asking every binary what it provides. Sections
// 1–3 put them next to Nexus in their tables; section 4 (below) adds memory
// per plugin process and gathers the peer goals of the hardening issue
// that those sections judged.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexus-eval/nexus/bench/internal/stockwire"
	pluginv1 "github.com/nexus-eval/nexus/internal/pb/nexus/plugin/v1"
	"github.com/nexus-eval/nexus/internal/testkit"
	"github.com/nexus-eval/nexus/manifest"
	"github.com/nexus-eval/nexus/sdk"
)

var peersSection = Section{Key: "peers", Title: "4. Peers: memory, and the goals", Run: runPeers}

const (
	echoPkg = "test/testplugins/echo"
	mcpPkg  = "bench/mcpecho"
	// mcpBareFlag makes mcpecho exit after the runtime and package init.
	mcpBareFlag = "-bare"
)

// ---- in-process ----

// peerMsg is the in-process echo's message: the same shape, and the same
// JSON decode and encode, as the plugins' echo tools.
type peerMsg struct {
	Text string `json:"text"`
}

func inprocEcho(in []byte) ([]byte, error) {
	var m peerMsg
	if err := json.Unmarshal(in, &m); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// inprocCall is the in-process peer: a Go function call, checked like the
// others.
func inprocCall(context.Context) error {
	out, err := inprocEcho(echoInput)
	if err != nil {
		return err
	}
	if !bytes.Equal(out, echoInput) {
		return fmt.Errorf("in-process call returned %q, want %q", out, echoInput)
	}
	return nil
}

// coldMsg serves inprocCold alone, so its one call pays encoding/json's
// first use of the type in this process.
type coldMsg struct {
	Text string `json:"text"`
}

// inprocCold times the in-process echo's first call in this process.
func inprocCold() (time.Duration, error) {
	t0 := time.Now()
	var m coldMsg
	err := json.Unmarshal(echoInput, &m)
	out, err2 := json.Marshal(m)
	d := time.Since(t0)
	if err != nil || err2 != nil || !bytes.Equal(out, echoInput) {
		return 0, fmt.Errorf("in-process first call: %q, %v, %v", out, err, err2)
	}
	return d, nil
}

// ---- MCP over stdio ----

// mcpSession is a connected MCP client of one mcpecho process.
type mcpSession struct {
	cs    *mcp.ClientSession
	cmd   *exec.Cmd
	close func()
}

// mcpConnect starts bin as an MCP stdio server and initializes a session
// with it, as an MCP client does (mcp.NewClient + mcp.CommandTransport).
func mcpConnect(ctx context.Context, bin string) (*mcpSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "nexus-bench", Version: "0.1.0"}, nil)
	cmd := command(bin)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		if cmd.Process != nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		return nil, fmt.Errorf("mcp connect: %w", err)
	}
	// Close closes the server's stdin and reaps it; it exits on EOF.
	return &mcpSession{cs: cs, cmd: cmd, close: onExit(func() { cs.Close() })}, nil
}

// call makes one checked echo call.
func (s *mcpSession) call(ctx context.Context) error {
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: json.RawMessage(echoInput)})
	if err != nil {
		return fmt.Errorf("mcp call: %w", err)
	}
	if res.IsError || len(res.Content) != 1 {
		return fmt.Errorf("mcp call: error %v, %d content items", res.IsError, len(res.Content))
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != string(echoInput) {
		return fmt.Errorf("mcp call returned %#v, want %q", res.Content[0], echoInput)
	}
	return nil
}

// mcpCold runs one complete cold call over MCP stdio: start + initialize,
// the first call, close (stdin closed, server reaped).
func mcpCold(ctx context.Context, bin string) (phases, error) {
	t0 := time.Now()
	s, err := mcpConnect(ctx, bin)
	if err != nil {
		return nil, err
	}
	defer s.close()
	t1 := time.Now()
	if err := s.call(ctx); err != nil {
		return nil, err
	}
	t2 := time.Now()
	s.close()
	t3 := time.Now()
	if s.cmd.ProcessState == nil {
		return nil, fmt.Errorf("mcpecho still running after Close")
	}
	return phases{0, t1.Sub(t0), 0, t2.Sub(t1), t3.Sub(t2)}, nil
}

// ---- pinned binaries ----

// newSecureStockClient is newStockClient with go-plugin's SecureConfig:
// the client hashes the binary before every launch. Its hash is fresh
// because SecureConfig.Check never resets it.
func newSecureStockClient(bin string, sum []byte) *plugin.Client {
	return plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  stockwire.Handshake,
		Plugins:          stockwire.Plugins(nil),
		Cmd:              command(bin),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           hclog.NewNullLogger(),
		Managed:          true,
		SecureConfig:     &plugin.SecureConfig{Checksum: sum, Hash: sha256.New()},
	})
}

func fileSHA256(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

// pinnedEcho lays out roots of the echo plugin whose manifest pins its
// binary's sha256.
type pinnedEcho struct {
	bin      string
	manifest []byte // the pinned nexus.toml
}

func newPinnedEcho(bin string) (*pinnedEcho, error) {
	src, err := os.ReadFile(filepath.Join(testkit.ModuleRoot, echoPkg, manifest.FileName))
	if err != nil {
		return nil, err
	}
	sum, err := fileSHA256(bin)
	if err != nil {
		return nil, err
	}
	const anchor = "\nprotocols = [1]\n"
	if !bytes.Contains(src, []byte(anchor)) {
		return nil, fmt.Errorf("%s/%s: no %q line to pin after", echoPkg, manifest.FileName, strings.TrimSpace(anchor))
	}
	pinned := bytes.Replace(src, []byte(anchor), []byte(anchor+"sha256 = \""+hex.EncodeToString(sum)+"\"\n"), 1)
	return &pinnedEcho{bin: bin, manifest: pinned}, nil
}

// root makes root/echo: the pinned manifest and a copy of the binary, a
// new file (a new inode) that no launch in this process has verified yet.
// The copy is synced so its writeback does not land in a timed launch.
func (p *pinnedEcho) root(root string) error {
	dir := filepath.Join(root, "echo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, manifest.FileName), p.manifest, 0o644); err != nil {
		return err
	}
	in, err := os.Open(p.bin)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(filepath.Join(dir, "echo"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// ---- asking every binary ----

// echoManifest returns what the echo binary prints for ManifestFlag.
func echoManifest(bin string) ([]byte, error) {
	out, err := command(bin, sdk.ManifestFlag).Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", bin, sdk.ManifestFlag, err)
	}
	return out, nil
}

var nameLine = regexp.MustCompile(`(?m)^name = "([a-z][a-z0-9_-]*)"$`)

// echoFleet lays out n plugin dirs under root, each the echo plugin under
// names of its own: the binary's own manifest with every name suffixed by
// the dir's number (so n plugins can share one registry), and a hard link
// to the one echo binary (so asking each binary reads the same cached
// file: the cheapest case for that approach).
func echoFleet(root, bin string, n int) error {
	m, err := echoManifest(bin)
	if err != nil {
		return err
	}
	if len(nameLine.FindAll(m, -1)) < 2 {
		return fmt.Errorf("echo manifest: no names to rename")
	}
	for i := range n {
		suffix := fmt.Sprintf("-%05d", i)
		dir := filepath.Join(root, "echo"+suffix)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		body := nameLine.ReplaceAll(m, []byte(`name = "${1}`+suffix+`"`))
		if err := os.WriteFile(filepath.Join(dir, manifest.FileName), body, 0o644); err != nil {
			return err
		}
		if err := testkit.LinkOrCopy(bin, filepath.Join(dir, filepath.Base(bin))); err != nil {
			return err
		}
	}
	return nil
}

// askEveryBinary is discovery the way Packer and Kong do it: run every
// plugin binary under root to ask what it provides (here ManifestFlag),
// NumCPU at a time, and parse and validate each answer. It returns the
// number of components found.
func askEveryBinary(root string) (int, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return 0, err
	}
	var next, components atomic.Int64
	errs := make([]error, runtime.NumCPU())
	var wg sync.WaitGroup
	for w := range errs {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(entries) && errs[w] == nil; i = int(next.Add(1) - 1) {
				dir := filepath.Join(root, entries[i].Name())
				out, err := command(filepath.Join(dir, "echo"), sdk.ManifestFlag).Output()
				if err != nil {
					errs[w] = fmt.Errorf("%s: %w", dir, err)
					return
				}
				m, ds := manifest.Parse(filepath.Join(dir, "(output)"), out)
				if m == nil {
					errs[w] = fmt.Errorf("%s: %v", dir, ds)
					return
				}
				components.Add(int64(len(m.Tools) + len(m.Agents) + len(m.Tasks)))
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return int(components.Load()), nil
}

// ---- memory ----

// procStatus reads VmRSS and RssAnon of pid, in bytes.
func procStatus(pid int) (rss, anon uint64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmRSS" && k != "RssAnon") {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/status: %s: %v", pid, k, err)
		}
		if k == "VmRSS" {
			rss = kb * 1024
		} else {
			anon = kb * 1024
		}
	}
	if rss == 0 {
		return 0, 0, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
	}
	return rss, anon, sc.Err()
}

// rssFlag, as the first argument, makes this binary a go-between that
// runs the rest of its arguments as a child and reports the child's peak
// RSS (see runChildRSS). It is handled in init, before main.
const rssFlag = "-bench-rss"

func init() {
	if len(os.Args) > 1 && os.Args[1] == rssFlag {
		os.Exit(rssGoBetween(os.Args[2:]))
	}
}

// rssReport is what the go-between prints.
type rssReport struct {
	MaxRSS uint64 `json:"maxrss"` // bytes
	Stdout []byte `json:"stdout"`
}

func rssGoBetween(args []string) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cmd := command(self, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(rssReport{MaxRSS: uint64(ru.Maxrss) * 1024, Stdout: out.Bytes()}); err != nil {
		return 1
	}
	return 0
}

// runChildRSS is runChild with the child's own peak RSS. A child's
// ru_maxrss also counts the RSS of the process that started it: Linux
// folds the hiwater RSS of the memory the child had before exec into it,
// and os/exec starts children with vfork, sharing this process's memory
// (a 300 MB parent makes /bin/true report 300 MB). So a go-between (this
// binary, freshly started, at idle size) starts the child and reports its
// rusage; the child's peak is exact once above the go-between's idle RSS.
func runChildRSS(mode string, args ...string) (stdout []byte, maxRSS uint64, err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, 0, err
	}
	cmd := command(self, append([]string{rssFlag, childFlag, mode}, args...)...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return nil, 0, fmt.Errorf("child %s: %v: %s", mode, err, strings.TrimSpace(errb.String()))
	}
	var r rssReport
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, 0, fmt.Errorf("child %s: %q: %v", mode, out, err)
	}
	return r.Stdout, r.MaxRSS, nil
}

// hostRSS10k is the peak RSS of a fresh process that discovered 10,000
// manifests, with the RSS of the same process idle, when section 1
// measured it in this run.
var hostRSS10k struct {
	ok        bool
	rss, idle uint64
}

// goal is one of the targets as a section judged it.
type goal struct {
	target, measured string
	ok               bool
}

// goals are recorded by the sections that measure them, in run order.
var goals []goal

func recordGoal(target, measured string, ok bool) {
	goals = append(goals, goal{target, measured, ok})
}

const idlePlugins = 10

func runPeers(env *Env, doc *Doc) error {
	ctx := context.Background()
	root, err := env.PluginRoot("peers", echoPkg)
	if err != nil {
		return err
	}
	stockBin, err := env.Binary("bench/stockecho")
	if err != nil {
		return err
	}
	mcpBin, err := env.Binary(mcpPkg)
	if err != nil {
		return err
	}

	// Each peer's N plugin processes, started one by one and called once.
	type peer struct {
		name  string
		start func() (pid int, stop func(), err error)
	}
	full, err := fullPipeline(ctx, 0)
	if err != nil {
		return err
	}
	peers := []peer{
		{"stock go-plugin (`bench/stockecho`)", func() (int, func(), error) {
			tool, stop, pid, err := startStockPID(stockBin)
			if err == nil {
				err = stockCall(ctx, tool)
			}
			return pid, stop, err
		}},
		{"MCP stdio (`bench/mcpecho`, official Go SDK)", func() (int, func(), error) {
			s, err := mcpConnect(ctx, mcpBin)
			if err != nil {
				return 0, nil, err
			}
			return s.cmd.Process.Pid, s.close, s.call(ctx)
		}},
		{"**Nexus** plugin (`test/testplugins/echo`, full pipeline host)", func() (int, func(), error) {
			// One host per process: a host runs one process per plugin.
			call, closeHost, h, err := nexusEcho(ctx, root, full)
			if err != nil {
				return 0, nil, err
			}
			if err := call(ctx); err != nil {
				return 0, closeHost, err
			}
			meta, err := h.Tools.Lookup("echo")
			if err != nil || meta.Origin == nil || meta.Origin().PID == 0 {
				return 0, closeHost, fmt.Errorf("nexus: no plugin PID (%v)", err)
			}
			return meta.Origin().PID, closeHost, nil
		}},
	}
	t := NewTable("plugin process", "processes", "VmRSS mean", "min – max", "RssAnon mean (private)", "÷ stock go-plugin")
	var stockRSS float64
	for _, p := range peers {
		var rss, anon []uint64
		var stops []func()
		for range idlePlugins {
			pid, stop, err := p.start()
			if stop != nil {
				stops = append(stops, stop)
			}
			if err != nil {
				for _, s := range stops {
					s()
				}
				return err
			}
			r, a, err := procStatus(pid)
			if err != nil {
				return err
			}
			rss, anon = append(rss, r), append(anon, a)
		}
		for _, s := range stops {
			s()
		}
		mean := func(xs []uint64) float64 {
			var s uint64
			for _, x := range xs {
				s += x
			}
			return float64(s) / float64(len(xs))
		}
		m := mean(rss)
		if stockRSS == 0 {
			stockRSS = m
		}
		t.Row(p.name, len(rss), MB(uint64(m)), MB(slices.Min(rss))+" – "+MB(slices.Max(rss)), MB(uint64(mean(anon))), Ratio(m, stockRSS))
	}

	doc.P("Memory of the peers' processes. %d plugin processes of each kind run at once, each "+
		"called once; then `VmRSS` is read from `/proc/PID/status` of each (the Nexus ones "+
		"through `Origin().PID`). VmRSS counts the binary's shared, file-backed pages in full "+
		"in every process; `RssAnon` is the memory private to one process (heap, stacks). The "+
		"in-process peer has no process of its own.", idlePlugins)
	doc.H3("Per idle plugin process")
	doc.Table(t)

	doc.H3("Host with 10,000 manifests")
	if !hostRSS10k.ok {
		dir, err := env.Dir("peers-10k")
		if err != nil {
			return err
		}
		if err := writeManifests(dir, discoveryTargetN); err != nil {
			return err
		}
		if _, rss, err := freshDiscovery(dir, discoveryTargetN); err != nil {
			return err
		} else {
			hostRSS10k.rss = rss
		}
		_, idle, err := runChildRSS("idle")
		if err != nil {
			return err
		}
		hostRSS10k.idle = idle
		hostRSS10k.ok = true
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		doc.P("Measured here (section 1 did not run): one fresh process discovering 10,000 generated manifests.")
	} else {
		doc.P("From section 1 (not measured twice): the median of its fresh-process discoveries.")
	}
	ht := NewTable("host process", "peak RSS", "idle process RSS", "RSS − idle", fmt.Sprintf("target ≤ %s", MB(discoveryTargetRSS)))
	ht.Row("10,000 manifests discovered, no plugin running", MB(hostRSS10k.rss), MB(hostRSS10k.idle),
		MB(hostRSS10k.rss-min(hostRSS10k.rss, hostRSS10k.idle)), PassFail(hostRSS10k.rss <= discoveryTargetRSS))
	doc.Table(ht)

	doc.H3("The peer goals")
	if len(goals) == 0 {
		doc.P("Sections 2 and 3 did not run, so no goal was judged.")
		return nil
	}
	doc.P("The hardening issue's peer goals, as sections 2 and 3 judged them in this run " +
		"(each is stated there next to its table as well).")
	gt := NewTable("goal", "measured", "verdict").AlignLeft()
	for _, g := range goals {
		gt.Row(g.target, g.measured, PassFail(g.ok))
	}
	doc.Table(gt)
	return nil
}

// startStockPID is startStock that also returns the plugin's PID.
func startStockPID(bin string) (tool pluginv1.ToolServiceClient, stop func(), pid int, err error) {
	c := newStockClient(bin)
	stop = onExit(c.Kill)
	rpc, err := c.Client()
	if err != nil {
		return nil, stop, 0, fmt.Errorf("stock go-plugin: %w", err)
	}
	tool, err = dispenseStock(rpc)
	if err != nil {
		return nil, stop, 0, err
	}
	rc := c.ReattachConfig()
	if rc == nil || rc.Pid == 0 {
		return nil, stop, 0, fmt.Errorf("stock go-plugin: no PID")
	}
	return tool, stop, rc.Pid, nil
}
