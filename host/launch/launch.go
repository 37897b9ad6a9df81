// Package launch is the host side of go-plugin: it starts a plugin binary
// the first time one of its components is needed (one process per binary,
// shared by all its components), checks the binary and its Describe answer
// against the manifest, relaunches it after it exits, and stops every
// process on Close.
package launch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc"

	"github.com/nexus-eval/nexus/host/component"
	"github.com/nexus-eval/nexus/host/integrity"
	pluginv1 "github.com/nexus-eval/nexus/internal/pb/nexus/plugin/v1"
	"github.com/nexus-eval/nexus/internal/wire"
	"github.com/nexus-eval/nexus/manifest"
)

// afterVerify runs between the binary's check and its start; tests use it
// to swap the file in that window.
var afterVerify = func(string) {}

// maxDescribeSize bounds a Describe answer: a plugin cannot make the host
// hold an arbitrarily large one.
const maxDescribeSize = 16 << 20

// DefaultStartTimeout bounds launch + handshake + Describe.
const DefaultStartTimeout = 10 * time.Second

// ErrClosed is returned after Close.
var ErrClosed = errors.New("launcher closed")

// Option configures a Launcher.
type Option func(*config)

type config struct {
	logger       hclog.Logger
	startTimeout time.Duration
	env          []string
	hostService  func(m *manifest.Manifest) pluginv1.HostServiceServer
	beginCall    func(ctx context.Context, m *manifest.Manifest) (context.Context, func())
	command      func(bin string) *exec.Cmd
	pins         func(m *manifest.Manifest) (string, bool)
	procs        int
	flushSpans   bool
	socketDir    string
	// Supervision; see supervise.go.
	idleTimeout    time.Duration
	healthInterval time.Duration
}

// WithLogger sets the logger; plugin output is logged under the plugin's
// name below it.
func WithLogger(l hclog.Logger) Option { return func(c *config) { c.logger = l } }

// WithStartTimeout bounds the launch, handshake and Describe of one plugin.
func WithStartTimeout(d time.Duration) Option { return func(c *config) { c.startTimeout = d } }

// WithEnv adds environment variables ("K=V") to every plugin process. By
// default a plugin sees only a minimal environment, never the host's
// secrets.
func WithEnv(env ...string) Option { return func(c *config) { c.env = append(c.env, env...) } }

// WithHostService serves the HostService newService returns to each plugin
// process through go-plugin's broker.
func WithHostService(newService func(m *manifest.Manifest) pluginv1.HostServiceServer) Option {
	return func(c *config) { c.hostService = newService }
}

// WithCallHook lets the host tag each call (for per-call host services):
// begin returns the context the call is made with and a function called
// when it ends.
func WithCallHook(begin func(ctx context.Context, m *manifest.Manifest) (context.Context, func())) Option {
	return func(c *config) { c.beginCall = begin }
}

// WithCommand starts plugin binaries with the command cmd returns (a
// sandbox, say) instead of directly; the command owns its process
// attributes. socketDir is where the plugin creates its go-plugin sockets:
// it must be reachable from both sides.
func WithCommand(cmd func(bin string) *exec.Cmd, socketDir string) Option {
	return func(c *config) { c.command, c.socketDir = cmd, socketDir }
}

// WithSpanFlush asks each plugin for its last spans before stopping it;
// set it when the host exports spans.
func WithSpanFlush() Option { return func(c *config) { c.flushSpans = true } }

// DefaultPluginProcs is the GOMAXPROCS of SDK plugins on the host.
const DefaultPluginProcs = 1

// WithPluginProcs sets the GOMAXPROCS of SDK plugins started on the host;
// 0 leaves it to the Go runtime (every core).
func WithPluginProcs(n int) Option { return func(c *config) { c.procs = n } }

// WithPins pins binaries the manifests do not pin (from a lock file).
func WithPins(pins func(m *manifest.Manifest) (string, bool)) Option {
	return func(c *config) { c.pins = pins }
}

// Launcher starts and owns plugin processes.
type Launcher struct {
	cfg config

	mu     sync.Mutex
	slots  map[string]*Slot // by manifest path
	closed bool
	done   chan struct{} // closed by Close
	reaper sync.WaitGroup
}

// New returns a Launcher.
func New(opts ...Option) *Launcher {
	cfg := config{logger: hclog.NewNullLogger(), startTimeout: DefaultStartTimeout, healthInterval: DefaultHealthInterval, procs: DefaultPluginProcs}
	for _, o := range opts {
		o(&cfg)
	}
	l := &Launcher{cfg: cfg, slots: map[string]*Slot{}, done: make(chan struct{})}
	if cfg.idleTimeout > 0 {
		l.reaper.Add(1)
		go func() {
			defer l.reaper.Done()
			l.reapIdle()
		}()
	}
	return l
}

// Slot returns the slot of the plugin described by m. Nothing starts until
// the slot's Process is called.
func (l *Launcher) Slot(m *manifest.Manifest) *Slot {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := m.Path
	if key == "" {
		key = m.Plugin.Name
	}
	s, ok := l.slots[key]
	if !ok {
		s = &Slot{l: l, m: m}
		l.slots[key] = s
	}
	return s
}

// Running returns the number of live plugin processes.
func (l *Launcher) Running() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.slots {
		if p := s.cur.Load(); p != nil && !p.client.Exited() {
			n++
		}
	}
	return n
}

// Close stops every plugin process and refuses further launches.
func (l *Launcher) Close() error {
	l.mu.Lock()
	if !l.closed {
		close(l.done)
	}
	l.closed = true
	slots := make([]*Slot, 0, len(l.slots))
	for _, s := range l.slots {
		slots = append(slots, s)
	}
	l.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range slots {
		wg.Go(s.stop)
	}
	wg.Wait()
	l.reaper.Wait()
	return nil
}

func (l *Launcher) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// Slot is the place of one plugin binary: empty, launching, or holding a
// running process.
type Slot struct {
	l *Launcher
	m *manifest.Manifest

	cur atomic.Pointer[Process]

	mu      sync.Mutex
	loading chan struct{}
	err     error
	crashes crashes
	broken  error // set when the breaker is open
}

// Manifest returns the plugin's manifest.
func (s *Slot) Manifest() *manifest.Manifest { return s.m }

// Process returns the running process, launching it if there is none or
// the last one exited. Concurrent callers share one launch.
func (s *Slot) Process(ctx context.Context) (*Process, error) {
	if p := s.cur.Load(); p != nil && !p.client.Exited() {
		return p, nil
	}
	s.mu.Lock()
	if p := s.cur.Load(); p != nil && !p.client.Exited() {
		s.mu.Unlock()
		return p, nil
	}
	done := s.loading
	if done == nil {
		if s.l.isClosed() {
			s.mu.Unlock()
			return nil, fmt.Errorf("plugin %q: %w", s.m.Plugin.Name, ErrClosed)
		}
		done = make(chan struct{})
		s.loading = done
		go s.launch(done)
	}
	s.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		return nil, fmt.Errorf("plugin %q: waiting for launch: %w", s.m.Plugin.Name, ctx.Err())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.cur.Load(); p != nil && s.err == nil {
		return p, nil
	}
	return nil, s.err
}

func (s *Slot) launch(done chan struct{}) {
	var wait time.Duration
	var err error
	if old := s.cur.Swap(nil); old != nil {
		if !old.stopping.Load() || old.hungReason() != "" {
			s.mu.Lock()
			wait, s.broken = s.crashes.record(s.m.Plugin.Name, time.Now())
			s.mu.Unlock()
			s.l.cfg.logger.Warn("plugin crashed; relaunching", "plugin", s.m.Plugin.Name, "status", old.exitStatus(), "backoff", wait)
		}
		old.kill()
	}
	s.mu.Lock()
	err = s.broken
	s.mu.Unlock()
	var p *Process
	if err == nil {
		select {
		case <-time.After(wait):
		case <-s.l.done:
		}
		p, err = start(s.l.cfg, s.m)
	}
	s.mu.Lock()
	if err == nil && s.l.isClosed() {
		p.kill()
		p, err = nil, fmt.Errorf("plugin %q: %w", s.m.Plugin.Name, ErrClosed)
	}
	if err == nil {
		s.cur.Store(p)
	}
	s.err = err
	s.loading = nil
	s.mu.Unlock()
	close(done)
}

func (s *Slot) stop() {
	s.mu.Lock()
	done := s.loading
	s.mu.Unlock()
	if done != nil {
		<-done // a launch in flight sees closed and kills what it started
	}
	if p := s.cur.Swap(nil); p != nil {
		p.kill()
	}
}

// Process is one running plugin binary.
type Process struct {
	Manifest *manifest.Manifest
	// Protocol is the negotiated wire protocol version.
	Protocol int
	RPC      *wire.Client
	// HostID is the broker id of the HostService served to this process,
	// 0 when none is.
	HostID uint32
	flush  bool // ask for the plugin's last spans before stopping it

	client *plugin.Client
	cmd    *exec.Cmd
	stderr *tail
	pid    int
	digest *digest
	host   *grpc.Server

	inflight atomic.Int64
	lastUse  atomic.Int64 // unix nanoseconds
	stopping atomic.Bool  // the host is stopping it; its exit is no crash
	hung     atomic.Pointer[string]
	done     chan struct{}
	killOnce sync.Once
}

// serveHost serves srv to the plugin through the broker. The listener is
// set up before the launch returns, and the server stops with the process.
func (p *Process) serveHost(srv pluginv1.HostServiceServer) error {
	id := p.RPC.Broker.NextId()
	ln, err := p.RPC.Broker.Accept(id)
	if err != nil {
		return err
	}
	p.host = grpc.NewServer()
	pluginv1.RegisterHostServiceServer(p.host, srv)
	p.HostID = id
	go func() { _ = p.host.Serve(ln) }()
	return nil
}

// SHA256 returns the hex sha256 of the binary the process runs: the
// verified pin, or a hash computed in the background at launch (waiting
// for it if needed).
func (p *Process) SHA256() string { return p.digest.wait() }

// PID returns the plugin's process id.
func (p *Process) PID() int { return p.pid }

// StderrTail returns the last lines the plugin wrote to stderr.
func (p *Process) StderrTail() string { return p.stderr.String() }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool { return p.client.Exited() }

// flushTimeout bounds the wait for a plugin's last spans at stop.
const flushTimeout = 500 * time.Millisecond

func (p *Process) kill() {
	p.killOnce.Do(p.doKill)
}

func (p *Process) doKill() {
	p.stopping.Store(true)
	close(p.done)
	if p.hungReason() != "" && p.pid > 0 {
		// A hung plugin cannot answer go-plugin's graceful shutdown.
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	}
	if p.flush && !p.client.Exited() && p.hungReason() == "" {
		ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
		_, _ = p.RPC.Plugin.Flush(ctx, &pluginv1.FlushRequest{HostServiceId: p.HostID})
		cancel()
	}
	p.client.Kill()
	if p.host != nil {
		p.host.Stop()
	}
	// The plugin may have started children of its own; they share its
	// process group.
	if p.pid > 0 {
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	}
}

// start launches, handshakes and checks one plugin binary.
func start(cfg config, m *manifest.Manifest) (*Process, error) {
	name := m.Plugin.Name
	bin := m.BinaryPath()
	if err := checkBinary(m, bin); err != nil {
		return nil, err
	}
	pin := m.Plugin.SHA256
	if pin == "" && cfg.pins != nil {
		pin, _ = cfg.pins(m)
	}
	// The file is opened, checked and hashed through one descriptor, and
	// that descriptor is what runs: swapping the file at the path after
	// the check changes nothing.
	verified, err := integrity.Open(bin, pin)
	if err != nil {
		return nil, pinError(m, bin, err)
	}
	afterVerify(bin)
	defer verified.Close() // after the start below has exec'd it
	var dg *digest
	if pin != "" {
		dg = pinnedDigest(verified.SHA256())
	} else {
		dg = lazyDigest(bin)
	}
	if !slices.ContainsFunc(m.Plugin.Protocols, func(v int) bool { return slices.Contains(wire.Protocols, v) }) {
		return nil, fmt.Errorf("plugin %q: %w: it speaks protocols %v, this host speaks %v: upgrade nexus-host or the plugin",
			name, component.ErrLaunch, m.Plugin.Protocols, wire.Protocols)
	}

	var cmd *exec.Cmd
	if cfg.command != nil {
		cmd = cfg.command(bin)
	} else {
		cmd = exec.Command(execPath(verified))
		cmd.Args[0] = bin // what ps shows
		cmd.Dir = m.Dir()
		cmd.SysProcAttr = &syscall.SysProcAttr{
			// Own process group, so Close reaches the plugin's children too.
			Setpgid: true,
			// The kernel signals the plugin when the thread that started it
			// dies, even if the host is killed with SIGKILL. SIGTERM, not
			// SIGKILL: an SDK plugin then kills its whole process group,
			// so what it started goes too.
			Pdeathsig: syscall.SIGTERM,
		}
	}
	cmd.Env = minimalEnv()
	if cfg.command == nil && cfg.procs > 0 {
		// Measured (BENCHMARKS.md): one P makes a plugin on the host
		// answer faster, alone and under 64 concurrent callers. Runtime
		// plugins keep every core: they run builds and tests.
		cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%d", wire.ProcsEnv, cfg.procs))
	}
	cmd.Env = append(cmd.Env, cfg.env...)
	for _, k := range m.Plugin.Grants.Env {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	var sockets *plugin.UnixSocketConfig
	var run func(hclog.Logger, *exec.Cmd, string) (runner.Runner, error)
	if cfg.command != nil {
		sockets = &plugin.UnixSocketConfig{TempDir: cfg.socketDir}
		run = runnerFor(cmd)
	}
	stderr := newTail(32)
	ccmd := cmd
	if run != nil {
		ccmd = nil // the runner starts cmd
	}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  wire.Handshake,
		VersionedPlugins: wire.PluginSets(nil),
		Cmd:              ccmd,
		SkipHostEnv:      true,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           cfg.logger.Named(name),
		StartTimeout:     cfg.startTimeout,
		Stderr:           stderr,
		UnixSocketConfig: sockets,
		RunnerFunc:       run,
	})
	fail := func(step string, err error) (*Process, error) {
		client.Kill()
		msg := fmt.Sprintf("plugin %q (%s): %s: %v", name, bin, step, err)
		if t := stderr.String(); t != "" {
			msg += "\nplugin stderr:\n" + t
		}
		return nil, fmt.Errorf("%w: %s", component.ErrLaunch, msg)
	}

	// Pdeathsig fires when the starting OS thread exits, not the process:
	// pin the start to one thread, which Go keeps alive after unlocking.
	runtime.LockOSThread()
	rpc, err := client.Client()
	runtime.UnlockOSThread()
	if err != nil {
		return fail("handshake", explainHandshake(err))
	}
	raw, err := rpc.Dispense(wire.PluginKey)
	if err != nil {
		return fail("dispense", err)
	}
	wc, ok := raw.(*wire.Client)
	if !ok {
		return fail("dispense", fmt.Errorf("unexpected client type %T", raw))
	}
	p := &Process{
		Manifest: m,
		Protocol: client.NegotiatedVersion(),
		RPC:      wc,
		client:   client,
		cmd:      cmd,
		stderr:   stderr,
		digest:   dg,
		done:     make(chan struct{}),
	}
	p.flush = cfg.flushSpans
	p.lastUse.Store(time.Now().UnixNano())
	if rc := client.ReattachConfig(); rc != nil {
		p.pid = rc.Pid
	}
	if cfg.hostService != nil {
		if err := p.serveHost(cfg.hostService(m)); err != nil {
			p.kill()
			return fail("host service", err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), cfg.startTimeout)
	defer cancel()
	desc, err := wc.Plugin.Describe(ctx, &pluginv1.DescribeRequest{HostServiceId: p.HostID}, grpc.MaxCallRecvMsgSize(maxDescribeSize))
	if err != nil {
		p.kill()
		return fail("describe", err)
	}
	if diff := Compare(m, desc); diff != "" {
		p.kill()
		return nil, fmt.Errorf("plugin %q: %w: the binary %s does not serve what %s declares; regenerate the manifest with `nexus-host plugins manifest %s` or rebuild the binary:\n%s",
			name, component.ErrLaunch, bin, m.Path, m.Dir(), diff)
	}
	if cfg.healthInterval > 0 {
		go p.health(cfg.healthInterval)
	}
	return p, nil
}

func explainHandshake(err error) error {
	msg := err.Error()
	switch {
	case errors.Is(err, plugin.ErrProcessNotFound):
		return fmt.Errorf("the process exited before the handshake: is this a Nexus plugin built with the sdk? (%w)", err)
	case strings.Contains(msg, "timeout while waiting for plugin to start"):
		return fmt.Errorf("the plugin did not complete the handshake in time: is it a Nexus plugin, and does it call sdk.Serve? (%w)", err)
	case strings.Contains(msg, "plugin exited before we could connect"):
		return fmt.Errorf("the process exited before the handshake: is this a Nexus plugin built with the sdk? (%w)", err)
	case strings.Contains(msg, "Unrecognized remote plugin message"):
		return fmt.Errorf("the binary printed something that is not a go-plugin handshake: is this a Nexus plugin built with the sdk? (%w)", err)
	}
	return err
}

// minimalEnv is what every plugin process gets: enough to run, nothing
// secret.
func minimalEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "LANG", "TZ"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}
