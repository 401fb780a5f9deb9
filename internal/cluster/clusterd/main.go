// Command clusterd runs a many-host axlr on this machine without Docker
// (make cluster): PostgreSQL from Debian's packages, the Temporal server
// built from the pinned module on it, and three axlrd hosts sharing both,
// each with its own state directory and host id, until interrupted.
// State lives in .cluster/ (or -dir), so a restart finds it again.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/underpass-ai/axlr/internal/cluster"
)

func main() {
	dir := flag.String("dir", ".cluster", "directory for the databases, the binaries and the hosts' state")
	hosts := flag.Int("hosts", 3, "how many axlrd hosts")
	flag.Parse()
	if err := run(*dir, *hosts); err != nil {
		fmt.Fprintln(os.Stderr, "clusterd:", err)
		os.Exit(1)
	}
}

func run(dir string, hosts int) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	logs := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return err
	}
	pgLog, err := os.Create(filepath.Join(logs, "postgres.log"))
	if err != nil {
		return err
	}
	defer pgLog.Close()
	pgDir := filepath.Join(dir, "postgres")
	if err := os.MkdirAll(pgDir, 0o700); err != nil {
		return err
	}
	pg, err := cluster.StartPostgres(ctx, cluster.PostgresOptions{Dir: pgDir, Durable: true, Log: pgLog})
	if err != nil {
		return err
	}
	defer pg.Stop()
	tLog, err := os.Create(filepath.Join(logs, "temporal.log"))
	if err != nil {
		return err
	}
	defer tLog.Close()
	fmt.Println("clusterd: building the Temporal server from the pinned module (the first time takes minutes)")
	tp, err := cluster.StartTemporal(ctx, cluster.TemporalOptions{Postgres: pg, Dir: filepath.Join(dir, "temporal"), Log: tLog})
	if err != nil {
		return err
	}
	defer tp.Stop()
	db, err := pg.CreateDatabase(ctx, "axlr")
	if err != nil {
		return err
	}
	bin := filepath.Join(dir, "bin")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin+"/", "./cmd/axlrd", "./cmd/axlr-tui")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build axlrd: %w", err)
	}
	var procs []*exec.Cmd
	defer func() {
		for _, p := range procs {
			_ = p.Process.Signal(syscall.SIGTERM)
		}
		for _, p := range procs {
			_ = p.Wait()
		}
	}()
	for i := 1; i <= hosts; i++ {
		id := fmt.Sprintf("host-%d", i)
		log, err := os.Create(filepath.Join(logs, id+".log"))
		if err != nil {
			return err
		}
		defer log.Close()
		cmd := exec.Command(filepath.Join(bin, "axlrd"), "--temporal-address", tp.Address, "--database", db,
			"--state-dir", filepath.Join(dir, id))
		// Each host's service API on its own ports: 7280 and 7281 for
		// host-1, 7282 and 7283 for host-2, …
		api := fmt.Sprintf("127.0.0.1:%d", 7280+2*(i-1))
		probe := fmt.Sprintf("127.0.0.1:%d", 7281+2*(i-1))
		cmd.Env = append(os.Environ(), "AXLR_HOST_ID="+id, "XDG_DATA_HOME="+filepath.Join(dir, id, "data"),
			"AXLR_SERVICE_LISTEN="+api, "AXLR_SERVICE_PROBE="+probe)
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("start %s: %w", id, err)
		}
		procs = append(procs, cmd)
	}
	fmt.Printf("clusterd: Temporal at %s (namespace default), PostgreSQL at %s, %d hosts host-1…host-%d (logs in %s)\n",
		tp.Address, db, hosts, hosts, logs)
	fmt.Printf("clusterd: the hosts' service APIs at http://127.0.0.1:7280, :7282, … (each host's token in %s/host-N/service/token)\n", dir)
	fmt.Printf("clusterd: AXLR_TEMPORAL_ADDRESS=%s AXLR_HOST_ID=host-1 %s/axlr-tui --repair \"…\"   (Ctrl-C stops them all)\n", tp.Address, bin)
	<-ctx.Done()
	fmt.Println("clusterd: stopping")
	return nil
}
