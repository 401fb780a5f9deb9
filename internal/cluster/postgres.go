// Package cluster starts the parts of a many-host axlr that are not axlrd:
// a PostgreSQL server from Debian's packages, and the Temporal server and
// its SQL tool built from the pinned go.temporal.io/server module. The
// store tests, the cluster end-to-end tests and `make cluster` start them
// through it, so each is started one way.
package cluster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// PostgresOptions configure StartPostgres.
type PostgresOptions struct {
	// Dir is where the server keeps its data and socket; "" is a new
	// temporary directory, removed by Stop.
	Dir string
	// Durable keeps fsync on. Off by default: a test's database dies with
	// it, and fsync costs CI minutes.
	Durable bool
	// Log receives the server's output; nil discards it.
	Log io.Writer
}

// Postgres is a PostgreSQL server this process started.
type Postgres struct {
	// Dir holds data/ and the socket.
	Dir string
	// Port is the TCP port on 127.0.0.1.
	Port int
	// User is the superuser's name (trust authentication, loopback only).
	User string

	cmd     *exec.Cmd
	done    chan error
	removes bool
}

// superuser is the role initdb makes.
const superuser = "axlr"

// StartPostgres initialises a cluster in a directory and starts its server
// on 127.0.0.1 at a free port. When this process is root, the server runs
// as an unprivileged user (postgres, else nobody), as PostgreSQL demands.
func StartPostgres(ctx context.Context, o PostgresOptions) (*Postgres, error) {
	bin, err := PostgresBin()
	if err != nil {
		return nil, err
	}
	p := &Postgres{Dir: o.Dir, User: superuser}
	if p.Dir == "" {
		if p.Dir, err = os.MkdirTemp("", "axlr-postgres-"); err != nil {
			return nil, fmt.Errorf("postgres: %w", err)
		}
		p.removes = true
	}
	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(p.Dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("postgres: give %s to the server's user: %w", p.Dir, err)
		}
	}
	out := o.Log
	if out == nil {
		out = io.Discard
	}
	data := filepath.Join(p.Dir, "data")
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err != nil {
		initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", superuser,
			"--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync")
		initdb.Dir, initdb.Stdout, initdb.Stderr = p.Dir, out, out
		initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		if err := initdb.Run(); err != nil {
			return nil, fmt.Errorf("postgres: initdb %s: %w", data, err)
		}
	}
	if p.Port, err = freePort(); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	args := []string{"-D", data, "-p", strconv.Itoa(p.Port), "-k", p.Dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "max_connections=400", "-c", "shared_buffers=64MB"}
	if !o.Durable {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	p.cmd = exec.Command(filepath.Join(bin, "postgres"), args...)
	p.cmd.Dir, p.cmd.Stdout, p.cmd.Stderr = p.Dir, out, out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("postgres: start the server: %w", err)
	}
	p.done = make(chan error, 1)
	go func() { p.done <- p.cmd.Wait() }()
	if err := p.ready(ctx); err != nil {
		_ = p.Stop()
		return nil, err
	}
	return p, nil
}

// PostgresBin is the directory of Debian's PostgreSQL server programs:
// $AXLR_POSTGRES_BIN, the directory of an initdb on PATH, or the newest
// /usr/lib/postgresql/<version>/bin.
func PostgresBin() (string, error) {
	if d := os.Getenv("AXLR_POSTGRES_BIN"); d != "" {
		return d, nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(p), "postgres")); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return versionOf(a) - versionOf(b) })
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "postgres")); err == nil {
			return dirs[i], nil
		}
	}
	return "", errors.New("postgres: no PostgreSQL server found (install Debian's postgresql package, or set AXLR_POSTGRES_BIN to the directory of initdb and postgres)")
}

func versionOf(bin string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(bin)))
	return n
}

// serverCredential is whom the server runs as: nil (this process's user)
// unless this process is root, which PostgreSQL refuses.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("postgres: running as root, and neither a postgres nor a nobody user exists to run the server as")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// URL is the address of a database of the server.
func (p *Postgres) URL(database string) string {
	u := url.URL{Scheme: "postgres", User: url.User(p.User), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(p.Port)),
		Path: "/" + database, RawQuery: "sslmode=disable"}
	return u.String()
}

// ready waits until the server accepts connections (at most a minute).
func (p *Postgres) ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	db, err := sql.Open("pgx", p.URL("postgres"))
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	defer db.Close()
	for {
		err := db.PingContext(ctx)
		if err == nil {
			return nil
		}
		select {
		case werr := <-p.done:
			p.done <- werr
			return fmt.Errorf("postgres: the server exited before it was ready: %v", werr)
		case <-ctx.Done():
			return fmt.Errorf("postgres: not ready on port %d: %w", p.Port, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// CreateDatabase creates a database (if it does not exist) and returns its
// URL.
func (p *Postgres) CreateDatabase(ctx context.Context, name string) (string, error) {
	db, err := sql.Open("pgx", p.URL("postgres"))
	if err != nil {
		return "", fmt.Errorf("postgres: %w", err)
	}
	defer db.Close()
	var exists bool
	if err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return "", fmt.Errorf("postgres: look for database %s: %w", name, err)
	}
	if !exists {
		if _, err := db.ExecContext(ctx, `CREATE DATABASE `+quoteIdent(name)); err != nil {
			return "", fmt.Errorf("postgres: create database %s: %w", name, err)
		}
	}
	return p.URL(name), nil
}

// hasTable reports whether a database's search path holds a table.
func (p *Postgres) hasTable(ctx context.Context, database, table string) (bool, error) {
	db, err := sql.Open("pgx", p.URL(database))
	if err != nil {
		return false, fmt.Errorf("postgres: %w", err)
	}
	defer db.Close()
	var ok bool
	if err := db.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&ok); err != nil {
		return false, fmt.Errorf("postgres: look for table %s in %s: %w", table, database, err)
	}
	return ok, nil
}

// quoteIdent quotes an SQL identifier.
func quoteIdent(s string) string {
	out := []byte{'"'}
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			out = append(out, '"')
		}
		out = append(out, s[i])
	}
	return string(append(out, '"'))
}

// Stop shuts the server down (fast shutdown, then a kill after 30 s) and
// removes a temporary directory.
func (p *Postgres) Stop() error {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	}
	if p.removes {
		return os.RemoveAll(p.Dir)
	}
	return nil
}
