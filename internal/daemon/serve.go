package daemon

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// ShutdownTimeout bounds Serve's Shutdown: the worker's 10 s to finish
// its tasks, then the rest.
const ShutdownTimeout = 30 * time.Second

// Main parses axlrd's command line and serves until SIGINT or SIGTERM. It
// returns the process exit code: 0 after a signal, 1 when a part fails to
// open, fails while axlrd runs or fails to stop (the message names it), 2
// for a bad command line.
func Main(args []string, stdout, stderr io.Writer) int {
	opts, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "axlrd:", err)
		return 2
	}
	opts.Stdout, opts.Stderr = stdout, stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Serve(ctx, opts); err != nil {
		fmt.Fprintln(stderr, "axlrd:", err)
		return 1
	}
	return 0
}

// Serve opens a daemon, runs it until ctx is done or a part fails, and
// shuts it down within ShutdownTimeout. It returns why a part failed, or
// nil when ctx ended a daemon that stopped cleanly.
func Serve(ctx context.Context, o Options) error {
	d, err := New(ctx, o)
	if err != nil {
		return err
	}
	runErr := d.Run(ctx)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	return errors.Join(runErr, d.Shutdown(sctx))
}

func parseFlags(args []string, stderr io.Writer) (Options, error) {
	var o Options
	fs := flag.NewFlagSet("axlrd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: axlrd [flags]

axlrd runs axlr's workflows: by default on an embedded Temporal server that
persists to <state-dir>/temporal.db, with the Temporal Web UI, and a worker.
Settings come from $XDG_CONFIG_HOME/axlr/settings.json (or $AXLR_SETTINGS);
the AXLR_* variables override it, and flags override both.

Flags:
`)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.StateDir, "state-dir", "", "state directory, or $AXLR_STATE_DIR (default $XDG_STATE_HOME/axlr)")
	fs.IntVar(&o.FrontendPort, "frontend-port", 0, "embedded Temporal frontend port on 127.0.0.1, or $AXLR_FRONTEND_PORT (default 7233)")
	fs.IntVar(&o.UIPort, "ui-port", 0, "Temporal Web UI port on 127.0.0.1, or $AXLR_UI_PORT; 0 turns it off (default 8233)")
	fs.StringVar(&o.TemporalAddress, "temporal-address", "", "host:port of an existing Temporal cluster, or $AXLR_TEMPORAL_ADDRESS; starts no embedded server")
	fs.StringVar(&o.Namespace, "namespace", "", "Temporal namespace, or $AXLR_NAMESPACE (default \"default\")")
	fs.StringVar(&o.LogLevel, "log-level", "", "log level: trace, debug, info, warn, error, or $AXLR_LOG_LEVEL (default info)")
	fs.StringVar(&o.SettingsPath, "settings", "", "settings file, or $AXLR_SETTINGS (default $XDG_CONFIG_HOME/axlr/settings.json)")
	fs.StringVar(&o.MadeCommand, "made-command", "", "made-mcp executable for the MADE ceremony ledger, or $AXLR_MADE_COMMAND (default: settings made.command, else the embedded engine)")
	fs.StringVar(&o.Database, "database", "", "PostgreSQL `URL` (postgres://…) the hosts of a cluster share for MADE and the memory, or $AXLR_DATABASE (default: the state dir's files)")
	fs.StringVar(&o.SQLiteSync, "sqlite-sync", "", "embedded database durability: full (survives power loss) or normal (survives process crashes; faster), or $AXLR_SQLITE_SYNC (default full)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q (axlrd takes flags only; see --help)", fs.Arg(0))
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "ui-port" {
			o.UIPortSet = true
		}
	})
	return o, nil
}
