// Command vestibule is the operator's tool for a Vestibule deployment: it
// lists, inspects and changes rooms, pauses, resumes, closes and opens them,
// watches one live in the terminal, and serves the operator's console on
// 127.0.0.1. Against a stack in AWS (--stack NAME, or --endpoint URL) every
// admin call is signed with SigV4 from the standard AWS credential chain;
// against a local stack (make dev) it sends the admin key. docs/OPERATING.md
// is its manual.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/operator"
	"github.com/vestibule-dev/vestibule/internal/printer"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `vestibule — operate a Vestibule waiting room

Usage:
  vestibule rooms list                          every room: mode, figures, settings
  vestibule rooms get ROOM [--credential]       one room's settings and figures
  vestibule rooms set ROOM key=value… [--create] change settings (e.g. maxActive=500 admitPerMinute=3000)
  vestibule rooms pause ROOM                    mode=paused: the queue holds, nobody is admitted
  vestibule rooms resume ROOM                   mode=queue: admissions go on
  vestibule rooms close ROOM                    mode=closed: new arrivals refused, nobody admitted
  vestibule rooms open ROOM                     mode=queue: arrivals queue and are admitted again
  vestibule rooms drain ROOM                    drain the room (needs a deployment with the drain route)
  vestibule rooms delete ROOM [--force]         delete the room, its grants and sessions (--force: close and drain it first)
  vestibule rooms log ROOM                      who changed what: the room's audit log
  vestibule rooms settings                      the settings "rooms set" takes, with their types
  vestibule rooms schedule ROOM --at TIME key=value…
                                                plan a change for TIME (RFC 3339, or +15m): the ticks apply it then
  vestibule rooms schedule ROOM                 what is planned for the room (and any change refused at its time)
  vestibule rooms unschedule ROOM ID            cancel a planned change
  vestibule report ROOM [--csv]                 the room's sale: per-minute figures for its whole life, and totals
  vestibule invitations create ROOM [--uses N] [--expires D] [--bypass] [--id ID]
                                                an invitation to the room; prints the waiting page's link
                                                (--expires 90m, 48h, 30d; default 7d; --bypass: skips the line)
  vestibule invitations show ROOM ID            an invitation's uses, each with its visitor, and revocation
  vestibule invitations revoke ROOM ID          refuse every later join with the invitation
  vestibule visitors show ROOM REF              support lookup by the reference the waiting page shows:
                                                state, place, join, last poll, admission, consume, session end
  vestibule visitors restore ROOM REF --reason TEXT
                                                give a lost place back (audited, with the reason)
  vestibule watch ROOM [--interval 3s]          a live view of one room in the terminal
  vestibule console [--port 8484]               the console in your browser on 127.0.0.1
  vestibule verify-draw --room ROOM --ticket T  check a pre-queue draw against the room's published seed
                 (or --visitor REF)           (public data only: --endpoint, no credentials)
  vestibule smoke [--timeout 2m]                after a deploy: one visitor through a throwaway room (join, admission,
                                                consume, complete), then the room closed, drained and deleted
  vestibule preflight --template FILE           before a deploy: the account's Lambda concurrency and API throttle
                                                against the synthesized template, the region's services, and the
                                                cdk-nag rules it accepts (--standby-stack S --standby-region R:
                                                and that the standby can take over, as region status checks)
  vestibule region status --standby-stack S --standby-region R
                                                a two-region deployment: the Global Datastore's members and
                                                roles, the write name, whether the standby's API answers
  vestibule region failover --standby-stack S --standby-region R --yes
                                                the sale to the standby: promote its cache, give it every
                                                room (fencing the old region's late writes), close its booking
                                                events to holds (then: booking reconcile EVENT --origin F
                                                --apply for each), hold admission while the write name moves,
                                                resume (docs/OPERATING.md)
  vestibule booking reconcile EVENT --origin F  the kit's sold seats and units against the origin's record
                                                (JSON lines: a file, - for stdin, or a URL); exit 1 on a difference;
                                                --apply: after a total loss, put the record back and reopen
  vestibule events define EVENT --file DEF.json
                                                define or replace an event's seats, stock and hold rules
                                                (the JSON of PUT /api/admin/events/{event}; - for stdin)
  vestibule events get EVENT                    an event's definition, seat states, units left and counters
  vestibule events orders EVENT                 an event's orders, confirmed and cancelled
  vestibule gate attach --distribution ID --room ROOM [--dry-run]
                                                the edge gate on a CloudFront distribution you already have
                                                (store, functions, /.vestibule/* behaviour, associations; needs
                                                --stack; --open-paths /a,/b/*  --behaviour PATTERN  --origin-secret-file F;
                                                --routes /tickets=ROOM,HOST/merch=ROOM2: rooms by path, the rest open)
  vestibule gate detach --distribution ID --room ROOM [--delete] [--dry-run]
                                                take it off again (--delete: also its functions and store)
  vestibule gate serve --upstream URL (--room ROOM | --routes /PREFIX=ROOM,…) [--listen ADDR]
                                                the gating reverse proxy, for a site with nothing in front:
                                                the gate, then the site; /.vestibule/* to the API (--open-paths;
                                                with --stack its waiting room, API and keys; with --endpoint a
                                                local stack's, --keys .vestibule/keys; --waiting-room, --api;
                                                --tls-cert F --tls-key F: HTTPS)

Which deployment (every command but "rooms settings"):
  --stack NAME        a deployed stack: the endpoint is its ApiUrl output     (env VESTIBULE_STACK)
  --endpoint URL      the API's URL, e.g. http://localhost:8080               (env VESTIBULE_ENDPOINT)
  --admin-key KEY     a local stack's admin key; without it calls are signed  (env VESTIBULE_ADMIN_KEY)
  --profile NAME      AWS profile (default: the standard chain, AWS_PROFILE)
  --region REGION     AWS region (default: the profile's, AWS_REGION)
  --json              print the API's JSON (list, get, set, pause…, drain, events)
  --client-cert FILE, --client-key FILE
                      a client certificate (PEM), for a stack whose API domain requires mutual TLS
                      (env VESTIBULE_CLIENT_CERT, VESTIBULE_CLIENT_KEY)

docs/OPERATING.md has the whole manual.
`

// globals are the flags every command takes.
type globals struct {
	target operator.Target
	json   bool
	// clientCert and clientKey: PEM files of a client certificate, for a stack whose API
	// domain requires mutual TLS (apiTruststore).
	clientCert, clientKey string
}

func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.target.Stack, "stack", os.Getenv(config.EnvStack), "CloudFormation stack name (its ApiUrl output is the endpoint)")
	fs.StringVar(&g.target.Endpoint, "endpoint", os.Getenv("VESTIBULE_ENDPOINT"), "the API's base URL")
	fs.StringVar(&g.target.AdminKey, "admin-key", os.Getenv(config.EnvAdminKey), "a local stack's admin key (without it, calls are SigV4-signed)")
	fs.StringVar(&g.target.Profile, "profile", "", "AWS shared-config profile")
	fs.StringVar(&g.target.Region, "region", "", "AWS region")
	fs.BoolVar(&g.json, "json", false, "print JSON")
	fs.StringVar(&g.clientCert, "client-cert", os.Getenv("VESTIBULE_CLIENT_CERT"), "PEM client certificate, for an API domain with mutual TLS")
	fs.StringVar(&g.clientKey, "client-key", os.Getenv("VESTIBULE_CLIENT_KEY"), "PEM key of the client certificate")
}

// parse parses flags anywhere among the arguments and returns the others.
// With loose, an argument that starts with "-" but names no flag of fs is
// one of the others (refCommands).
func parse(fs *flag.FlagSet, args []string, loose bool) ([]string, error) {
	if loose {
		flags, pos := splitLoose(fs, args)
		if err := fs.Parse(flags); err != nil {
			return nil, err
		}
		return pos, nil
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// refCommands take, after the room, a reference or an id as the waiting page
// or a booking site printed it, which may start with "-" (a visitor id is
// base64url): there an argument that names no flag of the command is taken
// as it is, the way the operator pasted it, not refused as a flag.
var refCommands = map[string]bool{"visitors show": true, "visitors restore": true,
	"invitations show": true, "invitations revoke": true}

// splitLoose splits args into fs's flags (with their values) and the other
// arguments, in order: an argument that starts with "-" is a flag only when
// fs defines it (or it asks for help); after "--" every argument is another.
func splitLoose(fs *flag.FlagSet, args []string) (flags, others []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return flags, append(others, args[i+1:]...)
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		f := fs.Lookup(name)
		switch {
		case !strings.HasPrefix(a, "-") || len(a) == 1:
			others = append(others, a)
		case name == "h" || name == "help":
			flags = append(flags, a)
		case f == nil:
			others = append(others, a)
		default:
			flags = append(flags, a)
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !hasValue && !(ok && b.IsBoolFlag()) && i+1 < len(args) {
				i++
				flags = append(flags, args[i])
			}
		}
	}
	return flags, others
}

// usageError is a mistake in the command line: exit status 2.
type usageError string

// Error is the mistake, as said to the user.
func (e usageError) Error() string { return string(e) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := dispatch(ctx, args, stdout, stderr)
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		if _, err := fmt.Fprint(stdout, usage); err != nil {
			return 1
		}
		return 0
	case errors.As(err, &ue):
		_, _ = fmt.Fprintf(stderr, "vestibule: %s\n\nRun `vestibule help` for the commands.\n", ue) // nowhere left to report a failed write
		return 2
	case errors.Is(err, context.Canceled):
		return 130
	default:
		_, _ = fmt.Fprintf(stderr, "vestibule: %s\n", err) // nowhere left to report a failed write
		return 1
	}
}

// valueFlags are the flags that take a value, for commandFirst.
var valueFlags = map[string]bool{"stack": true, "endpoint": true, "admin-key": true, "profile": true, "region": true,
	"interval": true, "count": true, "port": true, "template": true, "public": true, "timeout": true,
	"client-cert": true, "client-key": true, "room": true, "ticket": true, "visitor": true, "origin": true,
	"distribution": true, "open-paths": true, "routes": true, "behaviour": true, "origin-secret-file": true, "file": true, "at": true,
	"uses": true, "expires": true, "id": true, "reason": true,
	"standby-stack": true, "standby-region": true,
	"upstream": true, "listen": true, "waiting-room": true, "api": true, "keys": true, "reload": true, "tls-cert": true, "tls-key": true}

// commandFirst moves the command words (e.g. "rooms", "list") before any
// flags given ahead of them, so "vestibule --stack S rooms list" works too.
func commandFirst(args []string) []string {
	var words, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(append(words, rest...), args[i:]...)
		case strings.HasPrefix(a, "-") && len(a) > 1:
			rest = append(rest, a)
			name := strings.TrimLeft(a, "-")
			if !strings.Contains(name, "=") && valueFlags[name] && i+1 < len(args) {
				i++
				rest = append(rest, args[i])
			}
		case len(words) == 0 || (len(words) == 1 && subcommands[words[0]] != ""):
			words = append(words, a)
		default:
			return append(append(words, rest...), args[i:]...)
		}
	}
	return append(words, rest...)
}

// subcommands are the command groups and the subcommands each takes.
var subcommands = map[string]string{
	"rooms":   "list, get, set, pause, resume, close, open, drain, delete, log, settings, schedule, unschedule",
	"booking": "reconcile",
	"gate":    "attach, detach, serve",
	"events":  "define, get, orders",
	// invitations.go, visitors.go
	"invitations": "create, show, revoke",
	"visitors":    "show, restore",
	"region":      "status, failover", // region.go
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd, args, err := commandName(commandFirst(args))
	if err != nil {
		return err
	}
	var g globals
	fs := flag.NewFlagSet("vestibule "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g.register(fs)
	c := &command{g: &g, stdout: stdout, stderr: stderr, out: printer.New(stdout)}
	run, err := c.bind(cmd, fs)
	if err != nil {
		return err
	}
	pos, err := parse(fs, args, refCommands[cmd])
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	if err != nil {
		return usageError(err.Error())
	}
	if err := run(ctx, pos); err != nil {
		return err
	}
	return c.out.Err()
}

// commandName takes the command off the arguments: one word, or two for a
// command group ("rooms list").
func commandName(args []string) (string, []string, error) {
	if len(args) == 0 {
		return "", nil, usageError("no command")
	}
	cmd, args := args[0], args[1:]
	if subs, ok := subcommands[cmd]; ok {
		if len(args) == 0 {
			return "", nil, usageError(cmd + " needs a subcommand: " + subs)
		}
		cmd, args = cmd+" "+args[0], args[1:]
	}
	return cmd, args, nil
}

// runFunc runs a command on its positional arguments.
type runFunc func(ctx context.Context, pos []string) error

// bind registers cmd's own flags on fs and returns what runs it.
func (c *command) bind(cmd string, fs *flag.FlagSet) (runFunc, error) {
	switch cmd {
	case "help", "-h", "--help", "-help":
		return nil, flag.ErrHelp
	case "rooms list":
		return c.list, nil
	case "rooms get":
		fs.BoolVar(&c.credential, "credential", false, "also print the room's origin credential (a secret)")
		return c.get, nil
	case "rooms set":
		fs.BoolVar(&c.create, "create", false, "create the room if it does not exist")
		return c.set, nil
	case "rooms pause", "rooms resume", "rooms close", "rooms open":
		verb := strings.TrimPrefix(cmd, "rooms ")
		return func(ctx context.Context, pos []string) error { return c.mode(ctx, verb, pos) }, nil
	case "rooms drain":
		return c.drain, nil
	case "rooms delete":
		fs.BoolVar(&c.force, "force", false, "close and drain a room with visitors waiting, then delete it")
		return c.deleteRoom, nil
	case "rooms log", "rooms history":
		return c.roomLog, nil
	case "rooms settings":
		return c.settings, nil
	case "rooms schedule":
		fs.StringVar(&c.at, "at", "", "when to apply the change: an RFC 3339 time, or +DURATION from now")
		return c.schedule, nil
	case "rooms unschedule":
		return c.unschedule, nil
	case "report":
		fs.BoolVar(&c.csv, "csv", false, "print the per-minute figures as CSV")
		return c.report, nil
	case "watch":
		fs.DurationVar(&c.interval, "interval", defaultInterval, "time between refreshes")
		fs.IntVar(&c.count, "count", 0, "stop after this many refreshes (0: until Ctrl-C)")
		return c.watch, nil
	case "smoke":
		fs.StringVar(&c.public, "public", "", "the visitors' base URL (default: the stack's WaitingRoomUrl output, or --endpoint)")
		fs.DurationVar(&c.timeout, "timeout", 2*time.Minute, "give up after this long")
		return c.smoke, nil
	case "preflight":
		fs.StringVar(&c.template, "template", "", "the synthesized template (cdk.out.deploy/<stack>.template.json)")
		c.bindRegion(false, fs) // --standby-stack, --standby-region: check the standby too
		return c.preflight, nil
	case "verify-draw":
		fs.StringVar(&c.room, "room", "", "the room")
		fs.StringVar(&c.ticket, "ticket", "", "the visitor's ticket")
		fs.StringVar(&c.visitor, "visitor", "", "the visitor reference the waiting page shows (instead of --ticket)")
		return c.verifyDraw, nil
	case "booking reconcile":
		fs.StringVar(&c.origin, "origin", "", "the origin's record: a file of JSON lines, - for stdin, or an http(s) URL")
		fs.BoolVar(&c.apply, "apply", false, "first put the origin's orders back into the event closed after a total loss, and reopen it")
		return c.reconcile, nil
	case "events define":
		fs.StringVar(&c.file, "file", "", "the event's definition: a JSON file, - for stdin")
		return c.eventDefine, nil
	case "events get":
		return c.eventGet, nil
	case "events orders":
		return c.eventOrders, nil
	case "gate attach", "gate detach":
		return c.bindGate(cmd == "gate attach", fs), nil
	case "gate serve":
		return c.bindGateServe(fs), nil // gate_serve.go
	case "console":
		fs.IntVar(&c.port, "port", defaultConsolePort, "port on 127.0.0.1 (0: any free port)")
		return c.console, nil
	case "region status", "region failover":
		return c.bindRegion(cmd == "region failover", fs), nil // region.go
	case "invitations create", "invitations show", "invitations revoke", "visitors show", "visitors restore":
		return c.bindInvitations(cmd, fs), nil // invitations.go
	}
	return nil, usageError(fmt.Sprintf("unknown command %q", cmd))
}

// bindGate registers the flags of gate attach (attach) or gate detach.
func (c *command) bindGate(attach bool, fs *flag.FlagSet) runFunc {
	fs.StringVar(&c.gate.distribution, "distribution", "", "the site's CloudFront distribution id")
	fs.StringVar(&c.room, "room", "", "the room that guards the site")
	fs.BoolVar(&c.gate.dryRun, "dry-run", false, "read only: print what would change, the distribution config's diff")
	if !attach {
		fs.BoolVar(&c.gate.delete, "delete", false, "also delete the gate's functions and store (after the distribution is deployed)")
		return c.gateDetach
	}
	fs.StringVar(&c.gate.openPaths, "open-paths", "", "comma-separated paths that pass without a session, e.g. /robots.txt,/static/*")
	fs.StringVar(&c.gate.routes, "routes", "", "rooms by path, comma-separated [HOST]/PREFIX=ROOM, e.g. /tickets=spring-tour,/merch=merch (the rest unprotected; --room still names the gate)")
	fs.Func("behaviour", "another behaviour's path pattern whose pages the room guards (repeatable)", func(v string) error {
		c.gate.behaviours = append(c.gate.behaviours, v)
		return nil
	})
	fs.StringVar(&c.gate.originSecretFile, "origin-secret-file", "", "a file holding the origin secret (default: read from the stack's OriginSecretArn)")
	return c.gateAttach
}

// command is one run of a command, with its flags.
type command struct {
	g              *globals
	stdout, stderr io.Writer
	out            *printer.Printer // stdout, keeping the first write error
	credential     bool             // get
	create         bool             // set
	force          bool             // delete
	interval       time.Duration    // watch
	count          int              // watch
	port           int              // console
	room, ticket   string           // verify-draw
	template       string           // preflight
	public         string           // smoke
	timeout        time.Duration    // smoke
	visitor        string           // verify-draw
	origin         string           // booking reconcile
	apply          bool             // booking reconcile
	gate           gateFlags        // gate attach, detach, serve
	serve          serveFlags       // gate serve
	file           string           // events define
	at             string           // rooms schedule
	csv            bool             // report
	inv            invitationFlags  // invitations, visitors
	region         regionFlags      // region status, failover
}

// client connects to the deployment the flags name.
func (c *command) client(ctx context.Context) (*operator.Client, error) {
	cl, err := operator.Connect(ctx, c.g.target)
	if err != nil || c.g.clientCert == "" && c.g.clientKey == "" {
		return cl, err
	}
	cl.HTTP, err = operator.ClientCertificateHTTP(c.g.clientCert, c.g.clientKey)
	return cl, err
}

// oneRoom checks that pos is exactly one room id.
func oneRoom(pos []string, what string) (string, error) {
	if len(pos) != 1 {
		return "", usageError(what + " takes one room id")
	}
	return pos[0], nil
}

// roomClient is the one room id of pos (oneRoom) and a client of the deployment.
func (c *command) roomClient(ctx context.Context, pos []string, what string) (string, *operator.Client, error) {
	id, err := oneRoom(pos, what)
	if err != nil {
		return "", nil, err
	}
	cl, err := c.client(ctx)
	return id, cl, err
}
