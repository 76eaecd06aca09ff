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
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/gowebpki/jcs"
	"golang.org/x/mod/sumdb/note"
)

const (
	// What the signed bytes start with.
	producerEventContext = "audit-ledger/producer-event/v1\n"
	// The api_key_id of the events the service records itself, and its binding entries' action.
	serviceKeyID        = "audit_ledger"
	producerBoundAction = "audit_ledger.key.producer_bound"
	// How many event ids a line names at most.
	maxNamed = 5
)

// signedFields are the fields a producer signs, by their API names.
var signedFields = []string{"timestamp", "actor_id", "actor_name", "actor_email", "action", "resource_type", "resource_id", "resource_name", "metadata", "organization_id"}

// eventFields are the keys of an event as the API returns it (src/domain/eventFields.ts): the service
// never returns another, nor one of these in another case.
var eventFields = []string{"id", "timestamp", "actor_id", "actor_name", "actor_email", "action", "resource_type", "resource_id", "resource_name", "metadata", "organization_id", "api_key_id", "producer_signature"}

// selfAuditActions are the actions the service records itself, exempt from producer signatures even
// under a client's key id (a key's own changes, such as a stream it creates, are recorded under it): the
// keys of SELF_AUDIT_ACTIONS in src/domain/selfAudit.ts, exactly (test/ledger/goVerifier.test.ts checks
// that this list is that one). Any other action, in the audit_ledger. namespace or not, in any case, is
// a producer's: no client may send such an action, so under a bound key it is a forgery, and checked.
var selfAuditActions = map[string]bool{
	"audit_ledger.member.invited":           true,
	"audit_ledger.invitation.revoked":       true,
	"audit_ledger.member.joined":            true,
	"audit_ledger.member.role_changed":      true,
	"audit_ledger.member.removed":           true,
	"audit_ledger.member.left":              true,
	"audit_ledger.key.created":              true,
	"audit_ledger.key.revoked":              true,
	"audit_ledger.key.producer_bound":       true,
	"audit_ledger.stream.created":           true,
	"audit_ledger.stream.paused":            true,
	"audit_ledger.stream.resumed":           true,
	"audit_ledger.stream.deleted":           true,
	"audit_ledger.organization.created":     true,
	"audit_ledger.export.run":               true,
	"audit_ledger.signin.failed":            true,
	"audit_ledger.retention.policy_changed": true,
	"audit_ledger.retention.pruned":         true,
	"audit_ledger.retention.erased":         true,
	"audit_ledger.retention.hold_placed":    true,
	"audit_ledger.retention.hold_released":  true,
}

// producerEvent is what the rules read of an event, each field from its exact key (never Go's
// case-insensitive struct matching); raw is its JSON as the server returned it.
type producerEvent struct {
	ID         string
	APIKeyID   string
	Action     string
	ResourceID *string         // nil: null or absent
	Metadata   json.RawMessage // nil: absent
	Signature  json.RawMessage // nil: absent (the event carries no signature)
	raw        json.RawMessage
}

// readEvent reads an event's JSON as the API's: an object whose keys are the API's event fields, each
// at most once and exactly so spelled (a key that differs in case, or any other, is refused: the service
// never returns one, and Go's decoder would take "API_KEY_ID" for api_key_id where JavaScript would not),
// with a string id, api_key_id and action.
func readEvent(raw json.RawMessage) (producerEvent, error) {
	e := producerEvent{raw: raw}
	keys, err := objectKeys(raw)
	if err != nil {
		return e, err
	}
	for _, key := range keys {
		if slices.Contains(eventFields, key) {
			continue
		}
		for _, field := range eventFields {
			if strings.EqualFold(key, field) {
				return e, fmt.Errorf("its key %q differs only in case from the API's field %q", key, field)
			}
		}
		return e, fmt.Errorf("its key %q is not one of the API's event fields", key)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return e, err
	}
	for name, into := range map[string]*string{"id": &e.ID, "api_key_id": &e.APIKeyID, "action": &e.Action} {
		value, ok := fields[name]
		if !ok || json.Unmarshal(value, into) != nil || bytes.Equal(bytes.TrimSpace(value), []byte("null")) {
			return e, fmt.Errorf("its %s is not a string", name)
		}
	}
	if e.ID == "" {
		return e, fmt.Errorf("its id is empty")
	}
	if value, ok := fields["resource_id"]; ok && !bytes.Equal(bytes.TrimSpace(value), []byte("null")) {
		var resourceID string
		if json.Unmarshal(value, &resourceID) != nil {
			return e, fmt.Errorf("its resource_id is neither a string nor null")
		}
		e.ResourceID = &resourceID
	}
	e.Metadata = fields["metadata"]
	e.Signature = fields["producer_signature"]
	return e, nil
}

// objectKeys are the keys of a JSON object, in order; a key given twice is an error.
func objectKeys(raw json.RawMessage) ([]string, error) {
	decoder := json.NewDecoder(bytes.NewReader(raw))
	if token, err := decoder.Token(); err != nil || token != json.Delim('{') {
		return nil, fmt.Errorf("it is not a JSON object")
	}
	var keys []string
	for decoder.More() {
		token, err := decoder.Token()
		if err != nil {
			return nil, err
		}
		key, _ := token.(string)
		if slices.Contains(keys, key) {
			return nil, fmt.Errorf("its key %q is given twice", key)
		}
		keys = append(keys, key)
		var value json.RawMessage
		if err := decoder.Decode(&value); err != nil {
			return nil, err
		}
	}
	if _, err := decoder.Token(); err != nil {
		return nil, err
	}
	if _, err := decoder.Token(); err != io.EOF {
		return nil, fmt.Errorf("it has more than one JSON value")
	}
	return keys, nil
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

// bindingOf is the API key a binding entry binds and the producer key it names (its metadata's exact
// key producer_key, a string); ok is false for any other event.
func bindingOf(e producerEvent) (keyID, producerKey string, ok bool) {
	if e.APIKeyID != serviceKeyID || e.Action != producerBoundAction || e.ResourceID == nil {
		return "", "", false
	}
	var metadata map[string]json.RawMessage
	if json.Unmarshal(e.Metadata, &metadata) != nil {
		return "", "", false
	}
	value, present := metadata["producer_key"]
	if !present || json.Unmarshal(value, &producerKey) != nil || bytes.Equal(bytes.TrimSpace(value), []byte("null")) {
		return "", "", false
	}
	return *e.ResourceID, producerKey, true
}

// isProducers says whether an event is a producer's words: not one the service recorded itself, by its
// key id or by one of its exact self-audit actions.
func isProducers(e producerEvent) bool {
	return e.APIKeyID != serviceKeyID && !selfAuditActions[e.Action]
}

func named(ids []string) string {
	if len(ids) > maxNamed {
		return strings.Join(ids[:maxNamed], ", ") + ", …"
	}
	return strings.Join(ids, ", ")
}

// checkProducerSignatures applies the producer-signature rules to the events proven here (in any
// order), with the bindings of the organization's binding entries proven here (every one the server
// listed, whether among the events or not) and of the -producer pins. complete: the events are every
// leaf of the tree, so a binding is among them or nowhere.
func checkProducerSignatures(events, bindingEntries []producerEvent, complete bool) {
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
	// The log's binding entries: each must agree with the pin and with every other entry of its key. A
	// binding entry among the events that the server's list of binding entries left out is a lie by
	// omission (the entries are never pruned, and the list was read after the events).
	listed := map[string]bool{}
	for _, e := range bindingEntries {
		listed[e.ID] = true
	}
	for _, e := range events {
		if _, _, ok := bindingOf(e); ok && !listed[e.ID] {
			check(false, "binding entry %s is among the events fetched, but not in the server's list of the organization's binding entries", e.ID)
			bindingEntries = append(bindingEntries, e)
		}
	}
	for _, e := range bindingEntries {
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
			fmt.Printf("skip  producer signature: %d signed event(s) of API key %s not checked: none of the binding entries the server listed binds the key, and none is pinned (if the server left its binding out: pass -producer %s=<producer key>): %s\n",
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
	var text string
	if json.Unmarshal(e.Signature, &text) != nil || bytes.Equal(bytes.TrimSpace(e.Signature), []byte("null")) {
		text = ""
	}
	signature, err := base64.StdEncoding.Strict().DecodeString(text)
	if err != nil || len(signature) != 64 || base64.StdEncoding.EncodeToString(signature) != text {
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
