package main

// Producer signatures, checked with code of its own: the signed bytes are built here from each proven
// event's JSON (the service's src/domain/producerSignature.ts is the other implementation), and the
// signature is verified with Go's signed-note verifier (golang.org/x/mod/sumdb/note: Ed25519, the key id
// checked against the key).

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/gowebpki/jcs"
	"golang.org/x/mod/sumdb/note"
)

const (
	// What the signed bytes start with.
	producerEventContext = "audit-ledger/producer-event/v1\n"
	// The api_key_id of the events the service records itself, and its binding entries' action.
	serviceKeyID        = "audit_ledger"
	producerBoundAction = "audit_ledger.key.producer_bound"
	// The service's own namespace of actions: no client may send one.
	reservedActionPrefix = "audit_ledger."
	// How many event ids a line names at most.
	maxNamed = 5
)

// signedFields are the fields a producer signs, by their API names.
var signedFields = []string{"timestamp", "actor_id", "actor_name", "actor_email", "action", "resource_type", "resource_id", "resource_name", "metadata", "organization_id"}

// producerEvent is what the rules read of an event; raw is its JSON as the server returned it.
type producerEvent struct {
	ID         string          `json:"id"`
	APIKeyID   string          `json:"api_key_id"`
	Action     string          `json:"action"`
	ResourceID *string         `json:"resource_id"`
	Metadata   json.RawMessage `json:"metadata"`
	Signature  *string         `json:"producer_signature"`
	raw        json.RawMessage
}

// binding is a producer key an API key is bound to, and where that was learned.
type binding struct {
	text     string
	verifier note.Verifier // nil: the text is not a valid Ed25519 verifier key
	where    string
}

// producerMessage is the bytes a producer signs for an event: the context line, then the RFC 8785
// canonical JSON of its signed fields, taken from its JSON (absent or null ones as null, metadata {}).
func producerMessage(raw json.RawMessage) ([]byte, error) {
	var event map[string]json.RawMessage
	if err := json.Unmarshal(raw, &event); err != nil {
		return nil, err
	}
	content := make(map[string]json.RawMessage, len(signedFields))
	for _, name := range signedFields {
		value, ok := event[name]
		if !ok || bytes.Equal(bytes.TrimSpace(value), []byte("null")) {
			value = json.RawMessage("null")
			if name == "metadata" {
				value = json.RawMessage("{}")
			}
		}
		content[name] = value
	}
	encoded, err := json.Marshal(content)
	if err != nil {
		return nil, err
	}
	canonical, err := jcs.Transform(encoded)
	if err != nil {
		return nil, err
	}
	return append([]byte(producerEventContext), canonical...), nil
}

// bindingOf is the API key a binding entry binds and the producer key it names; ok is false for any
// other event.
func bindingOf(e producerEvent) (keyID, producerKey string, ok bool) {
	if e.APIKeyID != serviceKeyID || e.Action != producerBoundAction || e.ResourceID == nil {
		return "", "", false
	}
	var metadata struct {
		ProducerKey *string `json:"producer_key"`
	}
	if json.Unmarshal(e.Metadata, &metadata) != nil || metadata.ProducerKey == nil {
		return "", "", false
	}
	return *e.ResourceID, *metadata.ProducerKey, true
}

// isProducers says whether an event is a producer's words: not one the service recorded itself, by its
// key id or its action's namespace (the service's test: the action trimmed of JavaScript's whitespace,
// its first characters compared case-insensitively; only ASCII letters lower-case to the prefix's).
func isProducers(e producerEvent) bool {
	if e.APIKeyID == serviceKeyID {
		return false
	}
	action := strings.TrimLeftFunc(e.Action, isJSWhitespace)
	return len(action) < len(reservedActionPrefix) || asciiLower(action[:len(reservedActionPrefix)]) != reservedActionPrefix
}

// isJSWhitespace is what JavaScript's String.prototype.trim removes (Go's unicode.IsSpace differs by
// U+0085, which JavaScript keeps, and U+FEFF, which it removes).
func isJSWhitespace(r rune) bool {
	return r == '\uFEFF' || (r != '\u0085' && unicode.IsSpace(r))
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func named(ids []string) string {
	if len(ids) > maxNamed {
		return strings.Join(ids[:maxNamed], ", ") + ", …"
	}
	return strings.Join(ids, ", ")
}

// checkProducerSignatures applies the producer-signature rules to the events proven here (raw JSON, in
// any order). complete: they are every leaf of the tree, so a binding is among them or nowhere.
func checkProducerSignatures(proven []json.RawMessage, complete bool) {
	events := make([]producerEvent, 0, len(proven))
	for _, raw := range proven {
		var e producerEvent
		if err := json.Unmarshal(raw, &e); err != nil {
			check(false, "producer signature: an event's JSON cannot be read: %v", err)
			continue
		}
		e.raw = raw
		events = append(events, e)
	}

	bindings := map[string]*binding{}
	bind := func(keyID, text, where string) *binding {
		b := &binding{text: strings.TrimSpace(text), where: where}
		if v, err := note.NewVerifier(b.text); err == nil {
			b.verifier = v
		}
		bindings[keyID] = b
		return b
	}
	pinnedIDs := make([]string, 0, len(pinned))
	for keyID := range pinned {
		pinnedIDs = append(pinnedIDs, keyID)
	}
	sort.Strings(pinnedIDs)
	for _, keyID := range pinnedIDs {
		bind(keyID, pinned[keyID], "-producer")
	}
	// The log's binding entries: each must agree with the pin and with every other entry of its key.
	for _, e := range events {
		keyID, text, ok := bindingOf(e)
		if !ok {
			continue
		}
		text = strings.TrimSpace(text)
		known := bindings[keyID]
		switch {
		case known == nil:
			bind(keyID, text, "binding entry "+e.ID)
			check(true, "binding entry %s binds API key %s to producer key %s", e.ID, keyID, text)
		case known.text == text:
			check(true, "binding entry %s binds API key %s to producer key %s, as %s does", e.ID, keyID, text, known.where)
		default:
			check(false, "binding entry %s binds API key %s to producer key %s, but %s binds it to %s", e.ID, keyID, text, known.where, known.text)
		}
	}

	verified, owed := 0, 0
	unchecked := map[string][]string{}
	for _, e := range events {
		if !isProducers(e) {
			continue
		}
		b := bindings[e.APIKeyID]
		if b == nil {
			if e.Signature != nil {
				unchecked[e.APIKeyID] = append(unchecked[e.APIKeyID], e.ID)
			}
			continue
		}
		owed++
		if verifyProducerSignature(e, b) {
			verified++
		}
	}

	keys := make([]string, 0, len(unchecked))
	for keyID := range unchecked {
		keys = append(keys, keyID)
	}
	sort.Strings(keys)
	for _, keyID := range keys {
		ids := unchecked[keyID]
		if complete {
			check(false, "producer signature: %d event(s) of API key %s carry a producer signature, but no binding entry of the log (every leaf of which was proven here) binds a producer key to it: %s",
				len(ids), keyID, named(ids))
		} else {
			fmt.Printf("skip  producer signature: %d signed event(s) of API key %s not checked: no binding entry of the key is among the events fetched and none is pinned (the binding may be older than the events fetched: pass -producer %s=<producer key>): %s\n",
				len(ids), keyID, keyID, named(ids))
		}
	}
	if len(bindings) > 0 {
		check(verified == owed, "producer signatures: %d of %d event(s) of %d bound API key(s) carry a valid signature by the bound producer key, verified here",
			verified, owed, len(bindings))
	}
}

// verifyProducerSignature checks one event of a bound key, printing its line.
func verifyProducerSignature(e producerEvent, b *binding) bool {
	if b.verifier == nil {
		check(false, "event %s: the producer key bound to API key %s (%s) is not a valid Ed25519 verifier key: %s", e.ID, e.APIKeyID, b.where, b.text)
		return false
	}
	if e.Signature == nil {
		check(false, "event %s of API key %s, bound to producer key %s, carries no producer signature", e.ID, e.APIKeyID, b.text)
		return false
	}
	signature, err := base64.StdEncoding.Strict().DecodeString(*e.Signature)
	if err != nil || len(signature) != 64 || base64.StdEncoding.EncodeToString(signature) != *e.Signature {
		check(false, "event %s of API key %s, bound to producer key %s, carries a malformed producer signature", e.ID, e.APIKeyID, b.text)
		return false
	}
	message, err := producerMessage(e.raw)
	if err != nil {
		check(false, "event %s: its signed fields cannot be canonicalized: %v", e.ID, err)
		return false
	}
	ok := b.verifier.Verify(message, signature)
	check(ok, "event %s: its producer signature, over its content canonicalized here, verifies with producer key %s bound to API key %s", e.ID, b.text, e.APIKeyID)
	return ok
}
