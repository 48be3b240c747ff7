// Command dirsvc is the directory service in one binary: it serves directories over HTTP, imports
// them, generates demo data and runs lifecycle operations on records.
//
//	dirsvc serve   [--data DIR] [--addr HOST:PORT]   primary and edge in one process
//	dirsvc primary [--replica-dir DIR] [--s3-bucket B ...] [--replication-token T]   the writer
//	dirsvc edge    --primary URL --replication-token T [--s3-bucket B ...]           a read edge
//	dirsvc import  [--data DIR] FILE...              load whole directories (NDJSON)
//	dirsvc republish [--data DIR] [SLUG...]          publish directories again from their canonical records
//	dirsvc gen     [--services N] [--seed S] [--slug SLUG] [--country AU|NZ] [--out FILE]
//	dirsvc record  [--data DIR] --dir SLUG OPERATION ...   lifecycle operations (see dirsvc record -h)
//	dirsvc clients [--data DIR] OPERATION ...        partner clients (see dirsvc clients -h)
//	dirsvc moderation [--data DIR] --dir SLUG OPERATION ...   forwarded proposals and issues (see dirsvc moderation -h)
//	dirsvc mirror  [--data DIR] OPERATION ...        mirrors of other directories (see dirsvc mirror -h)
//	dirsvc platform [--data DIR] senior-management SLUG on|off | server-key | signing-keys | rotate-signing-key | retire-signing-key KID
//	dirsvc backup  [--data DIR] [--replica-dir DIR] [--s3-bucket B ...]
//	dirsvc backup edge-policy --s3-bucket B [--s3-path P]   the read-only policy of edges' credentials
//	dirsvc restore [--data DIR] [--replica-dir DIR] [--s3-bucket B ...] [--directory SLUG | --file NAME [--txid N]] [--time T]
//
// Flags may come before or after a command's arguments; an argument a command does not take is a
// usage error (exit status 2), never a reason to stop reading flags. dirsvc COMMAND --help lists a
// command's own flags.
//
// The server key ($DIRSVC_SERVER_KEY, else data/server.key, created on first use; standard base64 in
// both) MACs client secrets and derives the token signing keys. It is not in the data folder's
// backups: `dirsvc platform server-key` prints it for a secret store. A start whose key is not the
// one the partner clients were made under says so and stops (--accept-new-server-key goes on). Sandbox
// clients are given --sandbox-directory or $DIRSVC_SANDBOX_DIRECTORY (default demo; none offers no
// sign-up on the developer portal).
//
// Every command on a data folder takes --data (default ./data, or $DIRSVC_DATA); the serving modes
// take --addr (default :8080, or $DIRSVC_ADDR). $DIRSVC_LOG_LEVEL (debug, info, warn, error; default
// info) sets what is logged; debug adds a line per request.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
	_ "time/tzdata" // IANA zones inside the binary, for hosts without them
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "dirsvc:", err)
	}
	os.Exit(exitCode(err))
}

// exitCode is the exit status of what run returned: 0 for success and for help asked for, 2 for a
// command line that is wrong (a usageError: an unknown command, flag or argument, or a bad flag
// value), 1 for a command that failed.
func exitCode(err error) int {
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		return 2
	}
	return 1
}

// usageError is a command line that is wrong: a command, flag, argument or flag value.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// usagef returns a usageError with the formatted message.
func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// Main holds what every mode shares: the data folder, the listen address and the logger.
type Main struct {
	Data   string
	Addr   string
	Stdout io.Writer
	Stderr io.Writer
	Log    *slog.Logger
}

const usage = `usage: dirsvc <command> [flags] [arguments]

commands:
  serve    run the service (primary and edge in one process); loads the demo directory into an empty data folder
  primary  serve and replicate every file continuously to --replica-dir and/or --s3-bucket; an empty data
           folder is first restored from there
  edge     serve every read from copies of the --primary's directories, followed continuously; forward
           everything else to the primary
  import   load a whole directory from an import file (NDJSON)
  republish publish directories (all, or those named) again from their canonical records, after an upgrade
  gen      write a generated demo directory in the import format
  export   write an export of a directory (CSV, JSON, FHIR NDJSON, HSDS) into a folder, as a tier reads it
  record   lifecycle operations on one record: update, close, delete, merge, reduce, takedown, restore, show
  clients  partner clients: create, list, grant, ungrant, rotate, revoke, request, requests, approve, refuse
  moderation forwarded proposals and issues: list, show, accept, approve, reject, resolve, no-action;
           moderators, moderator add|remove
  mirror   mirrors of other directories: add, list, remove, run-once; forward a correction upstream, receipt
  platform platform operator switches: senior-management SLUG on|off; server-key prints the server key;
           signing-keys lists the token signing keys; rotate-signing-key; retire-signing-key KID
  backup   copy every file of the data folder to a replica folder or S3 bucket once (Litestream);
           backup edge-policy --s3-bucket B --s3-path P prints the policy of edges' read-only bucket credentials
  images   images add --dir SLUG FILE...: publish logos and photos (PNG, JPEG, WebP) and print their paths
  restore  write files back from a replica folder or S3 bucket: all, one --directory, or one --file at
           --txid; at a --time

Every command that reads or writes a data folder takes --data DIR (default ./data, $DIRSVC_DATA); serve,
primary and edge take --addr HOST:PORT (default :8080, $DIRSVC_ADDR). dirsvc COMMAND --help lists a
command's flags and arguments. A wrong command line exits with status 2, a command that fails with 1.
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return usagef("no command")
		}
		return nil
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(envOr("DIRSVC_LOG_LEVEL", "info"))); err != nil {
		return fmt.Errorf("DIRSVC_LOG_LEVEL: %w", err)
	}
	m := &Main{Data: envOr("DIRSVC_DATA", "data"), Addr: envOr("DIRSVC_ADDR", ":8080"), Stdout: stdout, Stderr: stderr,
		Log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))}
	slog.SetDefault(m.Log) // what libraries (Litestream) log goes the same way
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return m.serve(ctx, rest)
	case "primary":
		return m.primaryMode(ctx, rest)
	case "edge":
		return m.edgeMode(ctx, rest)
	case "import":
		return m.importFile(ctx, rest)
	case "republish":
		return m.republish(ctx, rest)
	case "gen":
		return m.gen(rest)
	case "export":
		return m.exportDirectory(ctx, rest)
	case "record":
		return m.record(ctx, rest)
	case "clients":
		return m.clients(ctx, rest)
	case "moderation":
		return m.moderation(ctx, rest)
	case "mirror":
		return m.mirror(ctx, rest)
	case "platform":
		return m.platform(ctx, rest)
	case "backup":
		return m.backup(ctx, rest)
	case "restore":
		return m.restore(ctx, rest)
	case "images":
		return m.images(ctx, rest)
	}
	fmt.Fprint(stderr, usage)
	return usagef("unknown command %q", cmd)
}

// command returns the flag set of a command (name, e.g. "clients grant"). Its usage shows synopsis
// (the command's flags and arguments, and any text after) and then each flag the set holds, so a
// command shows only the flags it takes: add them with dataFlag, addrFlag and the like.
func (m *Main) command(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("dirsvc "+name, flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(m.Stderr, "usage: dirsvc %s %s\n", name, synopsis)
		any := false
		fs.VisitAll(func(*flag.Flag) { any = true })
		if any {
			fmt.Fprint(m.Stderr, "\nflags:\n")
			fs.PrintDefaults()
		}
	}
	return fs
}

// dataFlag adds --data, the data folder, to fs. Its default is the folder named so far ($DIRSVC_DATA,
// or a --data parsed before), so a second flag set of the same command line keeps what the first
// parsed.
func (m *Main) dataFlag(fs *flag.FlagSet) {
	fs.StringVar(&m.Data, "data", m.Data, "data folder ($DIRSVC_DATA)")
}

// addrFlag adds --addr, the listen address, to fs (of the modes that serve).
func (m *Main) addrFlag(fs *flag.FlagSet) {
	fs.StringVar(&m.Addr, "addr", m.Addr, "listen address ($DIRSVC_ADDR)")
}

// parseFlags parses the flags at the start of args with fs (fs.Args are the rest); a wrong flag
// is a usageError (the flag package has printed the usage).
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil && !errors.Is(err, flag.ErrHelp) {
		return &usageError{err.Error()}
	} else if err != nil {
		return err
	}
	return nil
}

// parseArgs parses args with fs and returns the positional arguments, of which there must be at
// least min and at most max (max < 0: any number). Flags may come before, between and after the
// arguments: the flag package alone stops at the first argument, and would take every flag after
// it for one more argument (a stray word would silently drop the flags that follow). "--" ends the
// flags. A wrong flag or count of arguments prints the usage and returns a usageError.
func parseArgs(fs *flag.FlagSet, args []string, min, max int) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
	switch {
	case len(pos) < min:
		fs.Usage()
		return nil, usagef("%s: too few arguments", strings.TrimPrefix(fs.Name(), "dirsvc "))
	case max >= 0 && len(pos) > max:
		fs.Usage()
		return nil, usagef("%s: unexpected argument %q", strings.TrimPrefix(fs.Name(), "dirsvc "), pos[max])
	}
	return pos, nil
}

// envInt returns the integer in the environment variable key, or def when it is unset or not a number.
func envInt(key string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(key)); err == nil {
		return n
	}
	return def
}

// envDuration returns the duration in the environment variable key, or def when it is unset or not
// a duration.
func envDuration(key string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(key)); err == nil {
		return d
	}
	return def
}

// envBool reports whether the environment variable key holds a true value (1, t, true, ...).
func envBool(key string) bool {
	b, _ := strconv.ParseBool(os.Getenv(key))
	return b
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
