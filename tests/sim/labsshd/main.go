// labsshd - a light SSH server for the apply bench's lab: one process, a
// goroutine a connection, sessions handed to the lab's simulator server.
//
// Why it exists: in bench/apply_bench.py every simulated host shares the
// machine's cores with the tool under measurement.  The lab's OpenSSH sshd
// forks three processes a connection and one a session (privilege
// separation, the user's child, the session): about 9 ms of CPU a connection
// and 2 ms a session on the project's machine, four times what the tool
// itself spends, so at 256 hosts on 16 cores the bench measured the lab's
// CPU, not the tool (docs/benchmarks.md).  A real ESXi host pays its sshd on
// its own cores.  This server speaks the same protocol with the same host
// keys, key exchanges, user and password, and hands each exec to the same
// simulator server (tests/sim/simd.py) through the same request simc sends
// (tests/sim/simc.c: "GCSIM1", a length, pid, umask, cwd, the environment,
// and stdin/stdout/stderr by SCM_RIGHTS; the answer "x N" or "s N").  The
// SSH protocol, its key exchanges and ciphers are golang.org/x/crypto/ssh's
// (Debian's golang-golang-x-crypto-dev), nothing of ours.
//
// The bench only (scripts/lab.sh with GC_LAB_SSH_SERVER=go): every test
// talks to OpenSSH's sshd.  No PTY, shell, subsystem or forwarding.  A
// session the simulator drops (simlab.drop_session: a reboot, a fault) is
// answered "d" by the simulator server's worker, and its connection closed.
//
// It reads the directives it honours from the sshd_config scripts/lab.sh
// writes for OpenSSH (Port, ListenAddress, HostKey, KexAlgorithms,
// AuthorizedKeysFile, AllowUsers, PasswordAuthentication, SetEnv, AcceptEnv,
// PidFile), so that both servers serve one configuration; a rebooting host
// ($GC_LAB_DOWN_DIR/ADDRESS, as tests/sim/downgate.c reads it) has its new
// connections reset before the banner.
//
//	labsshd -f SSHD_CONFIG -password-file FILE -simd SOCKET [-E LOG]
package main

import (
	"bufio"
	"bytes"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
)

type config struct {
	listen      []string
	hostKeys    []string
	kex         []string
	authKeys    string
	user        string
	allowNet    *net.IPNet
	password    bool
	setEnv      []string
	acceptEnv   map[string]bool
	pidFile     string
	home, shell string
}

// readConfig takes the directives above from an sshd_config: one
// "Keyword value..." a line, '#' comments, values without quotes (as
// scripts/lab.sh writes them).
func readConfig(path string) (*config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c := &config{acceptEnv: map[string]bool{}}
	port, addr := "22", "0.0.0.0"
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		w := strings.Fields(sc.Text())
		if len(w) == 0 || strings.HasPrefix(w[0], "#") {
			continue
		}
		if len(w) < 2 {
			return nil, fmt.Errorf("%s:%d: %s without a value", path, n, w[0])
		}
		switch strings.ToLower(w[0]) {
		case "port":
			port = w[1]
		case "listenaddress":
			addr = w[1]
		case "hostkey":
			c.hostKeys = append(c.hostKeys, w[1])
		case "kexalgorithms":
			c.kex = strings.Split(w[1], ",")
		case "authorizedkeysfile":
			c.authKeys = w[1]
		case "allowusers": // USER@CIDR, as the lab writes it
			u, cidr, ok := strings.Cut(w[1], "@")
			if !ok {
				return nil, fmt.Errorf("%s:%d: AllowUsers wants USER@CIDR", path, n)
			}
			_, ipn, err := net.ParseCIDR(cidr)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %v", path, n, err)
			}
			c.user, c.allowNet = u, ipn
		case "passwordauthentication":
			c.password = w[1] == "yes"
		case "setenv":
			c.setEnv = append(c.setEnv, w[1:]...)
		case "acceptenv":
			for _, v := range w[1:] {
				c.acceptEnv[v] = true
			}
		case "pidfile":
			c.pidFile = w[1]
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if c.user == "" || len(c.hostKeys) == 0 {
		return nil, fmt.Errorf("%s: no AllowUsers or no HostKey", path)
	}
	c.listen = []string{net.JoinHostPort(addr, port)}
	return c, nil
}

// The lab user's home and shell, from /etc/passwd (sshd's getpwnam).
func (c *config) lookupUser() {
	c.home, c.shell = "/", "/bin/sh"
	data, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return
	}
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Split(l, ":")
		if len(f) == 7 && f[0] == c.user {
			c.home, c.shell = f[5], f[6]
		}
	}
}

// Key exchanges x/crypto/ssh does not have (group exchange, group16) are
// left out of what is offered; the rest keep the configuration's order.
var knownKex = map[string]bool{
	"curve25519-sha256": true, "curve25519-sha256@libssh.org": true,
	"ecdh-sha2-nistp256": true, "ecdh-sha2-nistp384": true, "ecdh-sha2-nistp521": true,
	"diffie-hellman-group14-sha256": true, "diffie-hellman-group14-sha1": true,
}

type server struct {
	cfg      *config
	ssh      *ssh.ServerConfig
	simd     string
	downDir  string
	password []byte
}

func (s *server) serverConfig() error {
	sc := &ssh.ServerConfig{ServerVersion: "SSH-2.0-gclab_labsshd"}
	for _, k := range s.cfg.kex {
		if knownKex[k] {
			sc.KeyExchanges = append(sc.KeyExchanges, k)
		}
	}
	for _, p := range s.cfg.hostKeys {
		pem, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		signer, err := ssh.ParsePrivateKey(pem)
		if err != nil {
			return fmt.Errorf("%s: %v", p, err)
		}
		sc.AddHostKey(signer)
	}
	if s.cfg.password && s.password != nil {
		sc.PasswordCallback = func(m ssh.ConnMetadata, pw []byte) (*ssh.Permissions, error) {
			if s.allowed(m) && subtle.ConstantTimeCompare(pw, s.password) == 1 {
				return nil, nil
			}
			return nil, fmt.Errorf("password refused")
		}
	}
	if s.cfg.authKeys != "" {
		sc.PublicKeyCallback = func(m ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if s.allowed(m) && s.authorized(key) {
				return nil, nil
			}
			return nil, fmt.Errorf("key refused")
		}
	}
	s.ssh = sc
	return nil
}

func (s *server) allowed(m ssh.ConnMetadata) bool {
	a, ok := m.RemoteAddr().(*net.TCPAddr)
	return ok && m.User() == s.cfg.user && s.cfg.allowNet.Contains(a.IP)
}

func (s *server) authorized(key ssh.PublicKey) bool {
	data, err := os.ReadFile(s.cfg.authKeys)
	if err != nil {
		return false
	}
	want := key.Marshal()
	for len(data) > 0 {
		k, _, _, rest, err := ssh.ParseAuthorizedKey(data)
		if err != nil {
			return false
		}
		if bytes.Equal(k.Marshal(), want) {
			return true
		}
		data = rest
	}
	return false
}

// down: the dialled address's host is rebooting (tests/sim/downgate.c's rule:
// $GC_LAB_DOWN_DIR/ADDRESS holds the Unix time in ms until which it is down).
func (s *server) down(local net.Addr) bool {
	a, ok := local.(*net.TCPAddr)
	if !ok || s.downDir == "" {
		return false
	}
	data, err := os.ReadFile(filepath.Join(s.downDir, a.IP.String()))
	if err != nil {
		return false
	}
	until, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	return err == nil && until > time.Now().UnixMilli()
}

func (s *server) serve(ln *net.TCPListener) {
	for {
		conn, err := ln.AcceptTCP()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			log.Printf("accept: %v", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if s.down(conn.LocalAddr()) {
			conn.SetLinger(0) // a reset before any byte, as downgate.c does
			conn.Close()
			continue
		}
		// OpenSSH's line at LogLevel VERBOSE: the apply bench counts a
		// host's connections by it (bench/apply_bench.py)
		r, l := conn.RemoteAddr().(*net.TCPAddr), conn.LocalAddr().(*net.TCPAddr)
		log.Printf("Connection from %s port %d on %s port %d", r.IP, r.Port, l.IP, l.Port)
		go s.connection(conn)
	}
}

func (s *server) connection(conn *net.TCPConn) {
	conn.SetDeadline(time.Now().Add(30 * time.Second)) // LoginGraceTime
	sc, chans, reqs, err := ssh.NewServerConn(conn, s.ssh)
	if err != nil {
		conn.Close()
		return
	}
	conn.SetDeadline(time.Time{})
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			nc.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			continue
		}
		go s.session(sc, ch, creqs)
	}
	sc.Close()
}

// One session: env requests, then an exec; anything else is refused.
func (s *server) session(sc *ssh.ServerConn, ch ssh.Channel, reqs <-chan *ssh.Request) {
	var env []string
	for req := range reqs {
		switch req.Type {
		case "env":
			var kv struct{ Name, Value string }
			ok := ssh.Unmarshal(req.Payload, &kv) == nil && s.cfg.acceptEnv[kv.Name]
			if ok {
				env = append(env, kv.Name+"="+kv.Value)
			}
			req.Reply(ok, nil)
		case "exec":
			var cmd struct{ Command string }
			if ssh.Unmarshal(req.Payload, &cmd) != nil {
				req.Reply(false, nil)
				continue
			}
			req.Reply(true, nil)
			go ssh.DiscardRequests(reqs)
			s.exec(sc, ch, cmd.Command, env)
			return
		default:
			req.Reply(false, nil)
		}
	}
	ch.Close()
}

// The environment OpenSSH gives a session (session.c do_setup_env), with
// the configuration's SetEnv and the client's accepted variables.
func (s *server) environ(sc *ssh.ServerConn, command string, extra []string) []string {
	r, l := sc.RemoteAddr().(*net.TCPAddr), sc.LocalAddr().(*net.TCPAddr)
	env := []string{
		"USER=" + s.cfg.user, "LOGNAME=" + s.cfg.user, "HOME=" + s.cfg.home,
		"PATH=/usr/local/bin:/usr/bin:/bin:/usr/games", "SHELL=" + s.cfg.shell,
		fmt.Sprintf("SSH_CLIENT=%s %d %d", r.IP, r.Port, l.Port),
		fmt.Sprintf("SSH_CONNECTION=%s %d %s %d", r.IP, r.Port, l.IP, l.Port),
		"SSH_ORIGINAL_COMMAND=" + command,
	}
	env = append(env, extra...)
	return append(env, s.cfg.setEnv...)
}

// exec hands the session to the simulator server with three pipes as its
// stdin, stdout and stderr, copies them to and from the channel, and ends
// the channel with the status the server answers (run: an exit status, or
// minus the number of the signal that killed the session).
func (s *server) exec(sc *ssh.ServerConn, ch ssh.Channel, command string, env []string) {
	defer ch.Close()
	addr := sc.LocalAddr().(*net.TCPAddr).IP
	status, err := s.run(ch, s.environ(sc, command, env))
	// when each session's end went out (the apply bench keeps this log
	// for a run far slower than the others)
	log.Printf("session on %s ended: status %d, err %v", addr, status, err)
	if err == errDropped { // the host went down under it: the connection drops, no status
		sc.Close()
		return
	}
	if err != nil {
		fmt.Fprintf(ch.Stderr(), "gclab: %v\n", err)
		status = 255
	}
	ch.CloseWrite() // EOF, the status, the close: OpenSSH's order
	if status < 0 { // killed by signal -status: what sshd says of such a session
		ch.SendRequest("exit-signal", false, ssh.Marshal(struct {
			Signal     string
			CoreDumped bool
			Error      string
			Lang       string
		}{signalName(-status), false, "", ""}))
		return
	}
	ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{uint32(status)}))
}

// dialSimd connects to the simulator server.  Go connects without blocking,
// and a Unix socket whose accept queue is full answers EAGAIN at once where
// simc's blocking connect waits: wait likewise (a few seconds at most).
func (s *server) dialSimd() (*net.UnixConn, error) {
	addr := &net.UnixAddr{Name: s.simd, Net: "unix"}
	for i := 0; ; i++ {
		uc, err := net.DialUnix("unix", nil, addr)
		if err == nil || !errors.Is(err, syscall.EAGAIN) || i == 500 {
			return uc, err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// RFC 4254 6.10's signal names ("KILL" for SIGKILL ...), by Linux number.
func signalName(n int) string {
	names := map[int]string{1: "HUP", 2: "INT", 3: "QUIT", 4: "ILL", 6: "ABRT", 8: "FPE", 9: "KILL",
		10: "USR1", 11: "SEGV", 12: "USR2", 13: "PIPE", 14: "ALRM", 15: "TERM"}
	if name, ok := names[n]; ok {
		return name
	}
	return "KILL" // no name of the RFC's: a kill is what the client is told
}

// errDropped: the simulator dropped the session (simlab.drop_session, a
// simulated reboot or a fault), which under OpenSSH kills its sshd: the
// session's connection is closed without an exit status.
var errDropped = errors.New("session dropped")

func (s *server) run(ch ssh.Channel, env []string) (int, error) {
	var body bytes.Buffer
	// pid 0: no process of this connection's own for simlab.drop_session to
	// kill (simc sends its own, whose parent is the connection's sshd)
	for _, f := range append([]string{"0", "22", s.cfg.home}, env...) {
		body.WriteString(f)
		body.WriteByte(0)
	}
	// os.Pipe's ends are non-blocking for Go's poller; Fd() below puts the
	// three that go to the session back in blocking mode (each end of a
	// pipe is a file description of its own), as a forked child's are.
	inR, inW, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return 0, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return 0, err
	}
	uc, err := s.dialSimd()
	if err == nil {
		head := make([]byte, 10)
		copy(head, "GCSIM1")
		binary.BigEndian.PutUint32(head[6:], uint32(body.Len()))
		rights := syscall.UnixRights(int(inR.Fd()), int(outW.Fd()), int(errW.Fd()))
		_, _, err = uc.WriteMsgUnix(append(head, body.Bytes()...), rights, nil)
	}
	// the session's ends are the server's now (or nobody's)
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		if uc != nil {
			uc.Close()
		}
		return 0, fmt.Errorf("the lab's simulator server: %v", err)
	}
	defer uc.Close()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { io.Copy(inW, ch); inW.Close() }()
	go func() { io.Copy(ch, outR); outR.Close(); wg.Done() }()
	go func() { io.Copy(ch.Stderr(), errR); errR.Close(); wg.Done() }()
	reply, _ := io.ReadAll(uc)
	wg.Wait()
	var n int
	if string(reply) == "d\n" {
		return 0, errDropped
	}
	if _, err := fmt.Sscanf(string(reply), "x %d", &n); err == nil {
		return n & 0xff, nil
	}
	if _, err := fmt.Sscanf(string(reply), "s %d", &n); err == nil && n > 0 {
		return -n, nil
	}
	return 0, fmt.Errorf("the lab's simulator server ended this session without a status")
}

func main() {
	cfgPath := flag.String("f", "", "the lab's sshd_config")
	pwPath := flag.String("password-file", "", "the lab user's password (one line)")
	simd := flag.String("simd", "", "the simulator server's socket")
	logPath := flag.String("E", "", "log file (default stderr)")
	flag.Parse()
	if *logPath != "" {
		lf, err := os.OpenFile(*logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			fmt.Fprintf(os.Stderr, "labsshd: %v\n", err)
			os.Exit(1)
		}
		log.SetOutput(lf)
	}
	log.SetPrefix("labsshd: ")
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	if *cfgPath == "" || *simd == "" {
		log.Fatal("usage: labsshd -f SSHD_CONFIG -password-file FILE -simd SOCKET [-E LOG]")
	}
	cfg, err := readConfig(*cfgPath)
	if err != nil {
		log.Fatal(err)
	}
	cfg.lookupUser()
	s := &server{cfg: cfg, simd: *simd, downDir: os.Getenv("GC_LAB_DOWN_DIR")}
	if *pwPath != "" {
		pw, err := os.ReadFile(*pwPath)
		if err != nil {
			log.Fatal(err)
		}
		s.password = bytes.TrimRight(pw, "\r\n")
	}
	if err := s.serverConfig(); err != nil {
		log.Fatal(err)
	}
	var lns []*net.TCPListener
	for _, a := range cfg.listen {
		la, err := net.ResolveTCPAddr("tcp4", a)
		if err != nil {
			log.Fatal(err)
		}
		ln, err := net.ListenTCP("tcp4", la)
		if err != nil {
			log.Fatal(err)
		}
		lns = append(lns, ln)
	}
	if cfg.pidFile != "" {
		if err := os.WriteFile(cfg.pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	for _, ln := range lns[1:] {
		go s.serve(ln)
	}
	s.serve(lns[0])
}
