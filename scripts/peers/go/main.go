// Command gopeer is cancelwire's sample peer for the official Go MCP SDK
// (github.com/modelcontextprotocol/go-sdk v1.7.0): a server and a client on
// stdio or Streamable HTTP. Only SDK code speaks on the wire; this file only
// chooses the tools and the scenario. Build it with scripts/build_go_peers.py.
//
//	gopeer server-stdio [-ledger-unavailable]
//	gopeer server-http -addr 127.0.0.1:PORT [-h2c] [-ledger-unavailable]   (prints READY once it listens)
//	gopeer client-stdio [-cancel-after D] [FLOW FLAGS] -- SERVER COMMAND ...
//	gopeer client-http -url http://127.0.0.1:PORT/mcp [-h2c] [FLOW FLAGS]
//
// The client lists the tools, calls append_ledger with a progress token,
// cancels the call's context once the 2nd progress notification arrived (the
// SDK then sends notifications/cancelled), waits -wait past the point where
// the tool would have finished, then calls read_ledger and pings.
// With -cancel-after D it lists the tools twice and adds once first (round
// trips a recording can measure), calls append_ledger with one step (its
// result 0.5 s after the server reads the call) and cancels the call's
// context D after sending it instead.
//
// Flow flags (the TypeScript SDK 2.x sample server's flows, sample_captures/ts2sdk):
// -tool NAME calls NAME (stamp_ledger ignores its cancel) with -steps steps,
// -cancel-at N cancels at the N-th progress notification, and -crossing calls
// a one-step tool and cancels once its result has arrived but is still unread
// (the client reads its stdout or response body slowly from then on until the
// SDK has sent the cancel), so the cancel follows the result on the wire.
// -ping=false skips the ping (the TS 2.x server has none in 2026-07-28).
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// AppendArgs are append_ledger's arguments.
type AppendArgs struct {
	Entry string `json:"entry" jsonschema:"the entry to append"`
	Steps int    `json:"steps" jsonschema:"how many 0.5 s steps the append takes"`
}

// LedgerOut is what append_ledger and read_ledger return.
type LedgerOut struct {
	Result []string `json:"result"`
}

// AddArgs are add's arguments.
type AddArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

// SumOut is add's result.
type SumOut struct {
	Result int `json:"result"`
}

type ledger struct {
	mu          sync.Mutex
	entries     []string
	unavailable bool
}

// appendLedger steps every 0.5 s with a progress notification and appends the
// entry at the end; it returns the context's error as soon as the call is
// cancelled (the SDK turns that into a CallToolResult with isError true).
func (l *ledger) appendLedger(ctx context.Context, req *mcp.CallToolRequest, in AppendArgs) (*mcp.CallToolResult, LedgerOut, error) {
	token := req.Params.GetProgressToken()
	for step := 0; step < in.Steps; step++ {
		if token != nil {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token, Progress: float64(step), Total: float64(in.Steps),
			})
		}
		select {
		case <-ctx.Done():
			return nil, LedgerOut{}, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, in.Entry)
	return nil, LedgerOut{Result: append([]string{}, l.entries...)}, nil
}

// stampLedger steps like appendLedger but ignores the cancel: it appends
// "entry #n" after every step and returns the ledger (the TypeScript SDK 2.x
// sample server's stamp_ledger, for its client's `ignoring` flow).
func (l *ledger) stampLedger(ctx context.Context, req *mcp.CallToolRequest, in AppendArgs) (*mcp.CallToolResult, LedgerOut, error) {
	token := req.Params.GetProgressToken()
	for step := 0; step < in.Steps; step++ {
		if token != nil {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token, Progress: float64(step), Total: float64(in.Steps),
			})
		}
		time.Sleep(500 * time.Millisecond)
		l.mu.Lock()
		l.entries = append(l.entries, fmt.Sprintf("%s #%d", in.Entry, step+1))
		l.mu.Unlock()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return nil, LedgerOut{Result: append([]string{}, l.entries...)}, nil
}

func (l *ledger) readLedger(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, LedgerOut, error) {
	if l.unavailable {
		return nil, LedgerOut{}, errors.New("ledger unavailable")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return nil, LedgerOut{Result: append([]string{}, l.entries...)}, nil
}

func add(ctx context.Context, req *mcp.CallToolRequest, in AddArgs) (*mcp.CallToolResult, SumOut, error) {
	return nil, SumOut{Result: in.A + in.B}, nil
}

func newServer(unavailable bool) *mcp.Server {
	server := mcp.NewServer(&mcp.Implementation{Name: "cancelwire-go-peer", Version: "1.0.0"}, nil)
	l := &ledger{unavailable: unavailable}
	mcp.AddTool(server, &mcp.Tool{Name: "append_ledger", Description: "Append an entry, slowly."}, l.appendLedger)
	mcp.AddTool(server, &mcp.Tool{Name: "stamp_ledger", Description: "Stamp an entry at every step; ignores cancellation."}, l.stampLedger)
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(server, &mcp.Tool{Name: "read_ledger", Description: "The ledger's entries.", Annotations: readOnly}, l.readLedger)
	mcp.AddTool(server, &mcp.Tool{Name: "add", Description: "a + b", Annotations: readOnly}, add)
	return server
}

// flow is what the client calls and when it cancels (see the flow flags above).
type flow struct {
	tool     string
	steps    int
	cancelAt int
	ping     bool
	crossing *crossing
}

// crossing makes the client read slowly once armed: the first read that brings
// a result closes arrived and returns only after release is closed, so the
// result waits unread while the SDK cancels the call.
type crossing struct {
	armed            atomic.Bool
	arrived, release chan struct{}
}

func (x *crossing) wrap(r io.ReadCloser) io.ReadCloser { return &heldReader{r, x} }

type heldReader struct {
	io.ReadCloser
	x *crossing
}

func (h *heldReader) Read(p []byte) (int, error) {
	n, err := h.ReadCloser.Read(p)
	if n > 0 && bytes.Contains(p[:n], []byte(`"result"`)) && h.x.armed.CompareAndSwap(true, false) {
		close(h.x.arrived)
		<-h.x.release
	}
	return n, err
}

// heldBodies hands the crossing every HTTP response body.
type heldBodies struct {
	http.RoundTripper
	x *crossing
}

func (h heldBodies) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := h.RoundTripper.RoundTrip(r)
	if resp != nil {
		resp.Body = h.x.wrap(resp.Body)
	}
	return resp, err
}

func runClient(ctx context.Context, transport mcp.Transport, wait, cancelAfter time.Duration, f flow) error {
	progressed := make(chan struct{}, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "cancelwire-go-client", Version: "1.0.0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			progressed <- struct{}{}
		},
	})
	session, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer session.Close()
	if _, err := session.ListTools(ctx, nil); err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	steps := f.steps
	if cancelAfter > 0 {
		steps = 1
		if _, err := session.ListTools(ctx, nil); err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		if _, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 2, "b": 3}}); err != nil {
			return fmt.Errorf("add: %w", err)
		}
	}
	callCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	params := &mcp.CallToolParams{Name: f.tool, Arguments: map[string]any{"entry": "order-42", "steps": steps}}
	params.SetProgressToken("append-1")
	if f.crossing != nil {
		f.crossing.armed.Store(true)
	}
	go func() {
		_, err := session.CallTool(callCtx, params)
		done <- err
	}()
	if cancelAfter > 0 {
		time.Sleep(cancelAfter)
	} else if f.crossing != nil {
		select {
		case <-f.crossing.arrived:
		case <-time.After(10 * time.Second):
			cancel()
			return errors.New("no result within 10 s")
		}
	} else if err := awaitProgress(progressed, f.cancelAt); err != nil {
		cancel()
		return err
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s ended with %v, not a cancellation", f.tool, err)
	}
	if f.crossing != nil {
		close(f.crossing.release)
	}
	time.Sleep(wait)
	if _, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "read_ledger", Arguments: map[string]any{}}); err != nil {
		return fmt.Errorf("read_ledger: %w", err)
	}
	if !f.ping {
		return nil
	}
	return session.Ping(ctx, nil)
}

// awaitProgress waits for the count-th progress notification, 10 s at most.
func awaitProgress(progressed <-chan struct{}, count int) error {
	for seen := 0; seen < count; seen++ {
		select {
		case <-progressed:
		case <-time.After(10 * time.Second):
			return errors.New("no progress within 10 s")
		}
	}
	return nil
}

// heldStdio starts the server command itself (as CommandTransport would) so
// that the crossing can read its stdout.
func heldStdio(cmd *exec.Cmd, x *crossing) (mcp.Transport, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &mcp.IOTransport{Reader: x.wrap(stdout), Writer: stdin}, nil
}

// protocols is HTTP/1.1 only, or unencrypted HTTP/2 only (h2c with prior knowledge).
func protocols(h2c bool) *http.Protocols {
	p := new(http.Protocols)
	if h2c {
		p.SetUnencryptedHTTP2(true)
	} else {
		p.SetHTTP1(true)
	}
	return p
}

func main() {
	if len(os.Args) < 2 {
		log.Fatal("usage: gopeer server-stdio|server-http|client-stdio|client-http [flags]")
	}
	mode := os.Args[1]
	flags := flag.NewFlagSet(mode, flag.ExitOnError)
	addr := flags.String("addr", "127.0.0.1:8000", "server-http: address to listen on")
	url := flags.String("url", "http://127.0.0.1:8000/mcp", "client-http: the server's MCP endpoint")
	unavailable := flags.Bool("ledger-unavailable", false, "server: read_ledger answers isError \"ledger unavailable\"")
	h2c := flags.Bool("h2c", false, "server-http, client-http: HTTP/2 without TLS (prior knowledge) instead of HTTP/1.1")
	wait := flags.Duration("wait", 2*time.Second, "client: how long to keep the session open after the cancel")
	cancelAfter := flags.Duration("cancel-after", 0, "client: cancel a one-step append this long after sending it (0: at the 2nd progress)")
	f := flow{}
	flags.StringVar(&f.tool, "tool", "append_ledger", "client: the tool to call and cancel")
	flags.IntVar(&f.steps, "steps", 4, "client: the tool's steps (0.5 s each)")
	flags.IntVar(&f.cancelAt, "cancel-at", 2, "client: cancel at this progress notification")
	flags.BoolVar(&f.ping, "ping", true, "client: ping at the end")
	crossed := flags.Bool("crossing", false, "client: cancel once the call's result arrived, still unread")
	_ = flags.Parse(os.Args[2:])
	if *crossed {
		f.crossing = &crossing{arrived: make(chan struct{}), release: make(chan struct{})}
	}
	ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	var err error
	switch mode {
	case "server-stdio":
		err = newServer(*unavailable).Run(ctx, &mcp.StdioTransport{})
	case "server-http":
		handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newServer(*unavailable) }, nil)
		mux := http.NewServeMux()
		mux.Handle("/mcp", handler)
		var ln net.Listener
		if ln, err = net.Listen("tcp", *addr); err == nil {
			fmt.Println("READY")
			err = (&http.Server{Handler: mux, Protocols: protocols(*h2c)}).Serve(ln)
		}
	case "client-stdio":
		args := flags.Args()
		if len(args) == 0 {
			log.Fatal("client-stdio needs the server command after --")
		}
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Stderr = os.Stderr
		var transport mcp.Transport = &mcp.CommandTransport{Command: cmd}
		if f.crossing != nil {
			transport, err = heldStdio(cmd, f.crossing)
		}
		if err == nil {
			err = runClient(ctx, transport, *wait, *cancelAfter, f)
		}
	case "client-http":
		transport := http.DefaultTransport.(*http.Transport).Clone()
		transport.Protocols = protocols(*h2c)
		client := &http.Client{Transport: transport}
		if f.crossing != nil {
			client.Transport = heldBodies{transport, f.crossing}
		}
		err = runClient(ctx, &mcp.StreamableClientTransport{Endpoint: *url, HTTPClient: client}, *wait, *cancelAfter, f)
	default:
		log.Fatalf("unknown mode %q", mode)
	}
	if err != nil {
		log.Fatal(err)
	}
}
