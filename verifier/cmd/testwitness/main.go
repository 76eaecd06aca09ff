// Command testwitness runs transparency-dev's witness library (github.com/transparency-dev/witness,
// package witness: witness.New with in-memory persistence, a cosignature/v1 signer, and its tlog-witness
// add-checkpoint HTTP handler) on a loopback address, following one log only: the Audit Ledger
// installation log named on the command line. The test suite builds it and submits to it; nothing here
// reaches out to the network (this is not cmd/omniwitness, which follows public logs).
//
//	testwitness -key witness.key -origin <LEDGER_NAME>/installation -log-vkey <verifier key> [-listen 127.0.0.1:0]
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"

	f_note "github.com/transparency-dev/formats/note"
	"github.com/transparency-dev/witness/persistence/inmemory"
	"github.com/transparency-dev/witness/witness"
	"golang.org/x/mod/sumdb/note"
)

var (
	keyFile = flag.String("key", "", "the witness's private key: PRIVATE+KEY+<name>+<id>+<base64(0x04 ‖ seed)>")
	origin  = flag.String("origin", "", "the origin of the one log it follows")
	logVkey = flag.String("log-vkey", "", "the verifier key of that log's signer")
	listen  = flag.String("listen", "127.0.0.1:0", "the address to listen on")
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	skey, err := os.ReadFile(*keyFile)
	if err != nil {
		return err
	}
	signer, err := f_note.NewSignerForCosignatureV1(string(skey))
	if err != nil {
		return fmt.Errorf("-key: %w", err)
	}
	logVerifier, err := note.NewVerifier(*logVkey)
	if err != nil {
		return fmt.Errorf("-log-vkey: %w", err)
	}
	ctx := context.Background()
	w, err := witness.New(ctx, witness.Opts{
		Persistence: inmemory.New(),
		Signers:     []note.Signer{signer},
		VerifierForLog: func(_ context.Context, o string) (note.Verifier, bool, error) {
			if o == *origin {
				return logVerifier, true, nil
			}
			return nil, false, nil
		},
	})
	if err != nil {
		return err
	}
	handler := witness.NewHTTPHandler(w)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /add-checkpoint", handler.AddCheckpoint)
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	fmt.Printf("Listening on http://%s/add-checkpoint\n", ln.Addr())
	return http.Serve(ln, mux)
}
