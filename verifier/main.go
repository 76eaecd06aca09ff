// Command verifier checks an Audit Ledger server's log with independent code: Go's signed-note
// verifier (golang.org/x/mod/sumdb/note), transparency-dev's checkpoint parser and RFC 6962 proof
// verification, and an RFC 8785 (JCS) canonicalizer of its own (github.com/gowebpki/jcs). It trusts
// nothing the server says about itself: the verifier key is pinned (-vkey), and each event's hash is
// recomputed from the event's JSON as the server returns it. It fetches the newest checkpoint, the
// organization's newest events and the inclusion proof of each, and, given an older checkpoint, the
// consistency proof from it.
//
//	go run . -url http://localhost:3000 -key alk_… -vkey <name>+<id>+<key> [-events 50] [-old old.checkpoint] [-save new.checkpoint]
//	         [-producer <api_key_id>=<producer verifier key> ...] [-witness <cosignature/v1 verifier key> ...] [-fsck]
//
// Producer signatures: an API key bound to a producer's Ed25519 key has every event signed by the
// producer (the service's docs/ledger.md, "Producer signatures"). The bindings are the service's
// `audit_ledger.key.producer_bound` entries (api_key_id exactly "audit_ledger"), listed from the log by
// their action whatever -events is and each proven like the events, and those pinned with -producer
// (repeated); a pin a binding entry contradicts, two entries naming different producer keys, or a binding
// entry that fails its proof, fail. Every proven event of a bound key but the service's own records
// (api_key_id "audit_ledger", or exactly one of the service's self-audit actions) must carry the
// producer's signature over "audit-ledger/producer-event/v1\n" ‖ JCS of its signed fields, which are
// taken here from the event's JSON and canonicalized here, and checked with Go's signed-note verifier
// (Ed25519, key id checked). An event's fields are read by their exact keys; an event with a key outside
// the API's event fields (one differing only in case included) fails. A signed event of a key no listed
// binding binds is reported as not checked (the server may have left its binding out: pin it), unless
// every leaf of the tree was proven here: then nothing binds it, and it fails.
//
// With -witness (repeated), the organization checkpoint must be included in an installation checkpoint
// cosigned by every witness named, checked with transparency-dev's cosignature/v1 verifier
// (formats/note). With -fsck, Tessera's fsck (github.com/transparency-dev/tessera/fsck) reads the
// organization's log and the installation log through the tlog-tiles API and rebuilds every tile from
// the entry bundles.
//
// It prints one line per check and exits 1 on any failure.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/gowebpki/jcs"
	"github.com/transparency-dev/formats/log"
	f_note "github.com/transparency-dev/formats/note"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/tessera/api"
	"github.com/transparency-dev/tessera/client"
	"github.com/transparency-dev/tessera/fsck"
	"golang.org/x/mod/sumdb/note"
)

type witnessKeys []string

func (w *witnessKeys) String() string     { return strings.Join(*w, ",") }
func (w *witnessKeys) Set(v string) error { *w = append(*w, v); return nil }

// producerPins is -producer: API key id → the producer verifier key the user pins for it.
type producerPins map[string]string

func (p producerPins) String() string {
	pins := make([]string, 0, len(p))
	for keyID, key := range p {
		pins = append(pins, keyID+"="+key)
	}
	return strings.Join(pins, ",")
}

func (p producerPins) Set(v string) error {
	keyID, key, ok := strings.Cut(v, "=")
	keyID, key = strings.TrimSpace(keyID), strings.TrimSpace(key)
	if !ok || keyID == "" || key == "" {
		return fmt.Errorf("want <api_key_id>=<producer verifier key>")
	}
	if _, err := note.NewVerifier(key); err != nil {
		return fmt.Errorf("producer key of %s: %w", keyID, err)
	}
	if known, ok := p[keyID]; ok && known != key {
		return fmt.Errorf("API key %s pinned to two producer keys", keyID)
	}
	p[keyID] = key
	return nil
}

var (
	baseURL = flag.String("url", "", "the server, e.g. http://localhost:3000")
	apiKey  = flag.String("key", "", "an API key of the organization")
	vkey    = flag.String("vkey", "", "the installation's verifier key, pinned: <name>+<key id>+<base64 key>")
	count   = flag.Int("events", 50, "how many of the newest events to prove")
	oldFile = flag.String("old", "", "a checkpoint (signed note) saved earlier: prove the log grew from it")
	save    = flag.String("save", "", "where to save the newest checkpoint")
	runFsck = flag.Bool("fsck", false, "read the organization's log and the installation log with Tessera's fsck")
	witness witnessKeys
	pinned  = producerPins{}
)

func init() {
	flag.Var(&witness, "witness", "a witness's cosignature/v1 verifier key: the installation checkpoint must carry its cosignature (repeatable)")
	flag.Var(pinned, "producer", "<api_key_id>=<producer verifier key>: the key's events must be signed by that producer key; the log's binding entries must agree (repeatable)")
}

var failed bool

// httpClient bounds each request: a server that never answers fails the run instead of holding it.
var httpClient = &http.Client{Timeout: 2 * time.Minute}

func check(ok bool, format string, args ...any) {
	if ok {
		fmt.Printf("ok    "+format+"\n", args...)
	} else {
		failed = true
		fmt.Printf("FAIL  "+format+"\n", args...)
	}
}

func get(path string, query url.Values, out any) error {
	u := strings.TrimSuffix(*baseURL, "/") + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+*apiKey)
	res, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", path, res.StatusCode, body)
	}
	return json.Unmarshal(body, out)
}

func decodeAll(in []string) ([][]byte, error) {
	out := make([][]byte, len(in))
	for i, s := range in {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

func main() {
	flag.Parse()
	if *baseURL == "" || *apiKey == "" || *vkey == "" {
		fmt.Fprintln(os.Stderr, "usage: verifier -url URL -key KEY -vkey VERIFIER_KEY [-events N] [-old FILE] [-save FILE] [-producer API_KEY_ID=PRODUCER_KEY ...] [-witness KEY ...] [-fsck]")
		os.Exit(2)
	}
	if err := run(); err != nil {
		fmt.Printf("FAIL  %v\n", err)
		os.Exit(1)
	}
	if failed {
		os.Exit(1)
	}
}

func run() error {
	verifier, err := note.NewVerifier(*vkey)
	if err != nil {
		return fmt.Errorf("-vkey: %w", err)
	}
	// What the server says its key is: it must be the pinned one (a mismatch is reported, never used).
	var key struct {
		KeyName     string `json:"key_name"`
		VerifierKey string `json:"verifier_key"`
	}
	if err := get("/v1/ledger/key", nil, &key); err != nil {
		return err
	}
	check(key.VerifierKey == *vkey && key.KeyName == verifier.Name(), "the server's key is the pinned key %s", *vkey)

	var newest struct {
		Origin       string                 `json:"origin"`
		TreeSize     uint64                 `json:"tree_size"`
		RootHash     string                 `json:"root_hash"`
		Checkpoint   string                 `json:"checkpoint"`
		Installation *installationInclusion `json:"installation"`
	}
	if err := get("/v1/ledger/checkpoint", nil, &newest); err != nil {
		return err
	}
	check(strings.HasPrefix(newest.Origin, verifier.Name()+"/"), "origin %s belongs to the key %s", newest.Origin, verifier.Name())
	cp, _, _, err := log.ParseCheckpoint([]byte(newest.Checkpoint), newest.Origin, verifier)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	check(cp.Size == newest.TreeSize && base64.StdEncoding.EncodeToString(cp.Hash) == newest.RootHash,
		"checkpoint of size %d is signed by the key and matches the answer's size and root", cp.Size)

	if len(witness) > 0 {
		if err := checkWitnessed(verifier, newest.Checkpoint, newest.Installation); err != nil {
			return err
		}
	}
	if *runFsck {
		checkTiles(verifier, strings.TrimPrefix(newest.Origin, verifier.Name()+"/"))
	}

	tree := signedTree{verifier: verifier, origin: newest.Origin, signed: newest.Checkpoint, cp: cp}
	// The events as the server returns them: each one's JSON is kept raw, to be canonicalized here.
	var page struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := get("/v1/events", url.Values{"limit": {fmt.Sprint(*count)}}, &page); err != nil {
		return err
	}
	// The events whose hash and inclusion were proven here, and the leaves they are: only they count
	// for producer signatures.
	var proven []producerEvent
	provenLeaves := map[uint64]bool{}
	provenIDs := map[string]bool{}
	for _, raw := range page.Data {
		if e, leafIndex, ok := tree.prove(raw, "event"); ok {
			proven = append(proven, e)
			provenLeaves[leafIndex] = true
			provenIDs[e.ID] = true
		}
	}
	// The organization's binding entries, wherever they lie in the log (they are never pruned, and
	// usually far older than the newest events): listed by their action, kept when the service recorded
	// them (api_key_id exactly its own), and each proven as the events are. Then every bound key is
	// known, and an unsigned event of one fails however few events were fetched.
	listed, err := listBindingEntries()
	if err != nil {
		return err
	}
	var bindingEntries []producerEvent
	listedIDs := map[string]bool{}
	considered := 0
	for _, raw := range listed {
		e, err := readEvent(raw)
		if err != nil {
			check(false, "a binding entry the server listed cannot be read as an event of the API: %v: %s", err, abbreviated(raw))
			considered++
			continue
		}
		if e.APIKeyID != serviceKeyID || e.Action != producerBoundAction {
			continue // not the service's: binds nothing
		}
		if listedIDs[e.ID] {
			continue // listed twice: proven once
		}
		listedIDs[e.ID] = true
		considered++
		if provenIDs[e.ID] {
			bindingEntries = append(bindingEntries, e)
			continue
		}
		if e, leafIndex, ok := tree.prove(raw, "binding entry"); ok {
			bindingEntries = append(bindingEntries, e)
			provenLeaves[leafIndex] = true
		}
	}
	check(len(bindingEntries) == considered, "%d of %d binding entries of the organization (action %s, api_key_id %s) proven in the signed tree of %d",
		len(bindingEntries), considered, producerBoundAction, serviceKeyID, cp.Size)
	// Every leaf of the tree proven here: the events are the whole log, so no binding lies beyond them.
	checkProducerSignatures(proven, bindingEntries, uint64(len(provenLeaves)) == cp.Size)

	if *oldFile != "" {
		old, err := os.ReadFile(*oldFile)
		if err != nil {
			return err
		}
		before, _, _, err := log.ParseCheckpoint(old, newest.Origin, verifier)
		if err != nil {
			return fmt.Errorf("saved checkpoint: %w", err)
		}
		var c struct {
			From  uint64   `json:"from"`
			To    uint64   `json:"to"`
			Proof []string `json:"proof"`
		}
		if err := get("/v1/ledger/consistency", url.Values{"from": {fmt.Sprint(before.Size)}, "to": {fmt.Sprint(cp.Size)}}, &c); err != nil {
			return err
		}
		hashes, err := decodeAll(c.Proof)
		check(err == nil && c.From == before.Size && c.To == cp.Size &&
			proof.VerifyConsistency(rfc6962.DefaultHasher, before.Size, cp.Size, hashes, before.Hash, cp.Hash) == nil,
			"the tree of %d is an extension of the saved tree of %d", cp.Size, before.Size)
	}
	if *save != "" {
		if err := os.WriteFile(*save, []byte(newest.Checkpoint), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// signedTree is the newest checkpoint, verified: what every event is proven against.
type signedTree struct {
	verifier note.Verifier
	origin   string
	signed   string // the checkpoint's signed note, as the server returned it
	cp       *log.Checkpoint
}

// prove reads an event's JSON as the API's (readEvent), recomputes its hash from that JSON, and checks
// that the leaf the server names commits to it and is included in the tree, printing a line for each;
// ok only when every check passed. what names the event in the lines ("event", "binding entry").
func (t signedTree) prove(raw json.RawMessage, what string) (e producerEvent, leafIndex uint64, ok bool) {
	e, err := readEvent(raw)
	if err != nil {
		check(false, "an %s served cannot be read as an event of the API: %v: %s", what, err, abbreviated(raw))
		return e, 0, false
	}
	canonical, err := jcs.Transform(raw)
	if err != nil {
		check(false, "%s %s: its JSON cannot be canonicalized: %v", what, e.ID, err)
		return e, 0, false
	}
	digest := sha256.Sum256(canonical)
	eventHash := hex.EncodeToString(digest[:])
	var p struct {
		EventID       string   `json:"event_id"`
		LeafIndex     uint64   `json:"leaf_index"`
		TreeSize      uint64   `json:"tree_size"`
		EventSHA256   string   `json:"event_sha256"`
		Commitment    string   `json:"event_commitment"`
		Salt          string   `json:"salt"`
		Leaf          string   `json:"leaf"`
		InclusionPath []string `json:"inclusion_path"`
		Checkpoint    string   `json:"checkpoint"`
	}
	if err := get("/v1/events/"+url.PathEscape(e.ID)+"/proof", url.Values{"tree_size": {fmt.Sprint(t.cp.Size)}}, &p); err != nil {
		check(false, "proof of %s %s: %v", what, e.ID, err)
		return e, 0, false
	}
	leaf, err := base64.StdEncoding.DecodeString(p.Leaf)
	if err != nil {
		check(false, "leaf of %s %s: %v", what, e.ID, err)
		return e, 0, false
	}
	var fields struct {
		EventSHA256 string `json:"event_sha256"`
		Commitment  string `json:"event_commitment"`
		Org         string `json:"org"`
		Seq         uint64 `json:"seq"`
		V           int    `json:"v"`
	}
	decoder := json.NewDecoder(bytes.NewReader(leaf))
	decoder.DisallowUnknownFields()
	leafOK := decoder.Decode(&fields) == nil && fields.Seq == p.LeafIndex+1 &&
		t.origin == t.verifier.Name()+"/"+fields.Org
	// The leaf must commit to the event as returned, hashed here: not to what the server says its hash is.
	// v1 leaves hold the event's SHA-256; v2 leaves hold SHA-256("audit-ledger/event/v2\n" ‖ salt ‖ JCS(event)).
	var hashOK bool
	switch fields.V {
	case 1:
		leafOK = leafOK && fields.Commitment == "" && p.Salt == ""
		hashOK = fields.EventSHA256 == eventHash && p.EventSHA256 == eventHash && p.EventID == e.ID
		check(hashOK, "%s %s: the SHA-256 of its canonical JSON, computed here, is the one its v1 leaf commits to", what, e.ID)
	case 2:
		salt, err := hex.DecodeString(p.Salt)
		h := sha256.New()
		h.Write([]byte("audit-ledger/event/v2\n"))
		h.Write(salt)
		h.Write(canonical)
		commitment := hex.EncodeToString(h.Sum(nil))
		leafOK = leafOK && fields.EventSHA256 == "" && err == nil && len(salt) == 32
		hashOK = fields.Commitment == commitment && p.Commitment == commitment && p.EventSHA256 == eventHash && p.EventID == e.ID
		check(hashOK, "%s %s: its salted commitment, computed here from its canonical JSON and salt, is the one its v2 leaf commits to", what, e.ID)
	default:
		leafOK = false
	}
	path, err := decodeAll(p.InclusionPath)
	inclusionOK := err == nil && p.Checkpoint == t.signed &&
		proof.VerifyInclusion(rfc6962.DefaultHasher, p.LeafIndex, t.cp.Size, rfc6962.DefaultHasher.HashLeaf(leaf), path, t.cp.Hash) == nil
	check(leafOK && inclusionOK, "%s %s is sequence number %d of the signed tree of %d", what, p.EventID, p.LeafIndex+1, t.cp.Size)
	return e, p.LeafIndex, hashOK && leafOK && inclusionOK
}

// listBindingEntries is every event the server lists with the binding entries' action, page by page
// (GET /v1/events?action=…, following next_cursor until it is null).
func listBindingEntries() ([]json.RawMessage, error) {
	var all []json.RawMessage
	seen := map[string]bool{}
	cursor := ""
	for {
		query := url.Values{"action": {producerBoundAction}, "limit": {"100"}}
		if cursor != "" {
			query.Set("cursor", cursor)
		}
		var page struct {
			Data       []json.RawMessage `json:"data"`
			NextCursor *string           `json:"next_cursor"`
		}
		if err := get("/v1/events", query, &page); err != nil {
			return nil, fmt.Errorf("binding entries: %w", err)
		}
		all = append(all, page.Data...)
		if page.NextCursor == nil {
			return all, nil
		}
		cursor = *page.NextCursor
		if cursor == "" || seen[cursor] {
			return nil, fmt.Errorf("binding entries: the server's next_cursor %q repeats or is empty", cursor)
		}
		seen[cursor] = true
	}
}

// abbreviated is a JSON text cut to a line's length.
func abbreviated(raw json.RawMessage) string {
	if len(raw) > 200 {
		return string(raw[:200]) + "…"
	}
	return string(raw)
}

// installationInclusion is the answer's `installation`: the installation checkpoint (with the
// witnesses' cosignatures) and the organization checkpoint's inclusion in it.
type installationInclusion struct {
	Origin        string   `json:"origin"`
	TreeSize      uint64   `json:"tree_size"`
	Checkpoint    string   `json:"checkpoint"`
	EntryIndex    uint64   `json:"entry_index"`
	Entry         string   `json:"entry"`
	InclusionPath []string `json:"inclusion_path"`
}

// checkWitnessed checks that the organization checkpoint is an entry of an installation checkpoint
// signed by the installation's key and cosigned by every -witness.
func checkWitnessed(verifier note.Verifier, orgCheckpoint string, inst *installationInclusion) error {
	if inst == nil {
		check(false, "no installation checkpoint includes the organization checkpoint yet")
		return nil
	}
	cosigners := make([]note.Verifier, 0, len(witness))
	for _, k := range witness {
		v, err := f_note.NewVerifierForCosignatureV1(k)
		if err != nil {
			return fmt.Errorf("-witness %s: %w", k, err)
		}
		cosigners = append(cosigners, v)
	}
	origin := verifier.Name() + "/installation"
	cp, _, n, err := log.ParseCheckpoint([]byte(inst.Checkpoint), origin, verifier, cosigners...)
	if err != nil {
		check(false, "installation checkpoint: %v", err)
		return nil
	}
	cosigned := 0
	for _, c := range cosigners {
		for _, sig := range n.Sigs {
			if sig.Name == c.Name() && sig.Hash == c.KeyHash() {
				cosigned++
				break
			}
		}
	}
	check(inst.Origin == origin && cp.Size == inst.TreeSize, "installation checkpoint of size %d is signed by the key", cp.Size)
	check(cosigned == len(cosigners), "%d of %d witnesses cosigned it (cosignature/v1, transparency-dev formats/note)", cosigned, len(cosigners))
	body := orgCheckpoint[:strings.Index(orgCheckpoint, "\n\n")+1]
	path, err := decodeAll(inst.InclusionPath)
	check(err == nil && inst.Entry == body &&
		proof.VerifyInclusion(rfc6962.DefaultHasher, inst.EntryIndex, cp.Size, rfc6962.DefaultHasher.HashLeaf([]byte(inst.Entry)), path, cp.Hash) == nil,
		"the organization checkpoint is entry %d of the installation tree of %d", inst.EntryIndex, cp.Size)
	return nil
}

// checkTiles runs Tessera's fsck over the tlog-tiles API of the organization's log and of the installation log.
func checkTiles(verifier note.Verifier, org string) {
	for _, target := range []struct{ prefix, origin, token string }{
		{"/v1/ledger/log/", verifier.Name() + "/" + org, *apiKey},
		{"/v1/ledger/installation/", verifier.Name() + "/installation", ""},
	} {
		u, err := url.Parse(strings.TrimSuffix(*baseURL, "/") + target.prefix)
		if err != nil {
			check(false, "%s: %v", target.prefix, err)
			continue
		}
		fetcher, err := client.NewHTTPFetcher(u, nil)
		if err != nil {
			check(false, "%s: %v", target.prefix, err)
			continue
		}
		if target.token != "" {
			fetcher.SetAuthorizationHeader("Bearer " + target.token)
		}
		f := fsck.New(target.origin, verifier, fetcher, bundleLeafHashes, fsck.Opts{N: 2})
		err = f.Check(context.Background())
		check(err == nil, "Tessera fsck: every tile of %s rebuilt from its entry bundles and consistent with its checkpoint (%v)", target.origin, err)
	}
}

func bundleLeafHashes(bundle []byte) ([][]byte, error) {
	eb := &api.EntryBundle{}
	if err := eb.UnmarshalText(bundle); err != nil {
		return nil, err
	}
	out := make([][]byte, 0, len(eb.Entries))
	for _, e := range eb.Entries {
		out = append(out, rfc6962.DefaultHasher.HashLeaf(e))
	}
	return out, nil
}
