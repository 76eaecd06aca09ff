package main

// How the producer check reads an event's JSON: by exact keys, never through encoding/json's
// case-insensitive struct matching. Run with `go test ./...` in verifier/ (test/ledger/goVerifier.test.ts
// runs it too).

import (
	"encoding/json"
	"strings"
	"testing"
)

const (
	boundKey    = "key_bound"
	producerKey = "producer.test+01234567+AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEB"
	otherKey    = "other.test+89abcdef+AQICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIC"
)

// eventJSON is an event as the API returns it, with `extra` (`"key":value` pairs) added at its end.
func eventJSON(apiKeyID, action, metadata, extra string) json.RawMessage {
	text := `{"id":"0190a0b0-0000-7000-8000-000000000001","timestamp":"2024-01-15T10:30:00.000Z","actor_id":"u1","actor_name":null,"actor_email":null,` +
		`"action":"` + action + `","resource_type":"api_key","resource_id":"` + boundKey + `","resource_name":null,"metadata":` + metadata +
		`,"organization_id":"org_1","api_key_id":"` + apiKeyID + `"` + extra + `}`
	return json.RawMessage(text)
}

func TestReadEventReadsTheAPIFieldsByExactKey(t *testing.T) {
	e, err := readEvent(eventJSON(serviceKeyID, producerBoundAction, `{"producer_key":"`+producerKey+`"}`, `,"producer_signature":"c2ln"`))
	if err != nil {
		t.Fatalf("readEvent: %v", err)
	}
	if e.ID != "0190a0b0-0000-7000-8000-000000000001" || e.APIKeyID != serviceKeyID || e.Action != producerBoundAction || e.ResourceID == nil || *e.ResourceID != boundKey || string(e.Signature) != `"c2ln"` {
		t.Fatalf("read %+v", e)
	}
	keyID, text, ok := bindingOf(e)
	if !ok || keyID != boundKey || text != producerKey {
		t.Fatalf("bindingOf = %q, %q, %v; want %q, %q, true", keyID, text, ok, boundKey, producerKey)
	}
}

// A client's event with a second, upper-case api_key_id: encoding/json's struct decoding takes the last
// case-insensitive match, so it would pass for the service's own record (exempt, and a binding entry if
// its action is). readEvent refuses it, as it refuses any key the API never returns.
func TestReadEventRefusesKeysOutsideTheAPIFields(t *testing.T) {
	forged := eventJSON(boundKey, producerBoundAction, `{"producer_key":"`+otherKey+`"}`, `,"API_KEY_ID":"`+serviceKeyID+`"`)
	var loose struct {
		APIKeyID string `json:"api_key_id"`
	}
	if err := json.Unmarshal(forged, &loose); err != nil || loose.APIKeyID != serviceKeyID {
		t.Fatalf("the hazard this guards against: encoding/json read api_key_id %q (err %v), want %q", loose.APIKeyID, err, serviceKeyID)
	}
	for _, c := range []struct {
		name string
		raw  json.RawMessage
		want string
	}{
		{"a key differing in case", forged, `its key "API_KEY_ID" differs only in case from the API's field "api_key_id"`},
		{"a key differing in case only", json.RawMessage(strings.Replace(string(eventJSON(boundKey, "invoice.paid", `{}`, "")), `"action"`, `"Action"`, 1)), `its key "Action" differs only in case from the API's field "action"`},
		{"a key the API never returns", eventJSON(boundKey, "invoice.paid", `{}`, `,"signed_by":"x"`), `its key "signed_by" is not one of the API's event fields`},
		{"a key given twice", eventJSON(boundKey, "invoice.paid", `{}`, `,"api_key_id":"`+serviceKeyID+`"`), `its key "api_key_id" is given twice`},
		{"an id that is no string", json.RawMessage(strings.Replace(string(eventJSON(boundKey, "invoice.paid", `{}`, "")), `"0190a0b0-0000-7000-8000-000000000001"`, `7`, 1)), "its id is not a string"},
		{"a null api_key_id", json.RawMessage(strings.Replace(string(eventJSON(boundKey, "invoice.paid", `{}`, "")), `"`+boundKey+`"}`, `null}`, 1)), "its api_key_id is not a string"},
		{"no object", json.RawMessage(`[1]`), "it is not a JSON object"},
		{"two values", json.RawMessage(string(eventJSON(boundKey, "invoice.paid", `{}`, "")) + `{}`), "it has more than one JSON value"},
	} {
		_, err := readEvent(c.raw)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: readEvent error %v, want %q", c.name, err, c.want)
		}
	}
}

// Metadata is the client's own, so any key may be in it; the binding's producer key is the exact
// producer_key, as the TypeScript verifier reads it (encoding/json's struct decoding would take the last
// case-insensitive match, PRODUCER_KEY).
func TestBindingOfReadsTheExactProducerKey(t *testing.T) {
	for _, c := range []struct {
		metadata string
		want     string // "": no binding
	}{
		{`{"producer_key":"` + producerKey + `","PRODUCER_KEY":"` + otherKey + `"}`, producerKey},
		{`{"PRODUCER_KEY":"` + otherKey + `","producer_key":"` + producerKey + `"}`, producerKey},
		{`{"PRODUCER_KEY":"` + otherKey + `"}`, ""},
		{`{"producer_key":null}`, ""},
		{`{"producer_key":7}`, ""},
		{`null`, ""},
	} {
		e, err := readEvent(eventJSON(serviceKeyID, producerBoundAction, c.metadata, ""))
		if err != nil {
			t.Fatalf("%s: readEvent: %v", c.metadata, err)
		}
		_, text, ok := bindingOf(e)
		if ok != (c.want != "") || text != c.want {
			t.Errorf("metadata %s: bindingOf = %q, %v; want %q", c.metadata, text, ok, c.want)
		}
	}
	// Only the service's own entry binds: a client's event of that action binds nothing.
	e, err := readEvent(eventJSON(boundKey, producerBoundAction, `{"producer_key":"`+otherKey+`"}`, ""))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := bindingOf(e); ok {
		t.Errorf("a binding entry under API key %s binds", boundKey)
	}
}

// Exempt from signing: the service's key id, or exactly one of its self-audit actions. Anything else in
// its namespace, in any case or spacing, is a producer's (and, since no client may send it, a forgery).
func TestIsProducersExemptsOnlyTheServicesOwnActions(t *testing.T) {
	for _, c := range []struct {
		apiKeyID, action string
		want             bool
	}{
		{serviceKeyID, "invoice.paid", false},
		{boundKey, "audit_ledger.stream.created", false},
		{boundKey, "audit_ledger.key.producer_bound", false},
		{boundKey, "invoice.paid", true},
		{boundKey, "Audit_Ledger.invoice.refunded", true},
		{boundKey, "audit_ledger.invoice.refunded", true},
		{boundKey, "AUDIT_LEDGER.stream.created", true},
		{boundKey, " audit_ledger.stream.created", true},
		{boundKey, "audit_ledger.stream.created ", true},
	} {
		e := producerEvent{ID: "e", APIKeyID: c.apiKeyID, Action: c.action}
		if got := isProducers(e); got != c.want {
			t.Errorf("isProducers(api_key_id %q, action %q) = %v, want %v", c.apiKeyID, c.action, got, c.want)
		}
	}
}
