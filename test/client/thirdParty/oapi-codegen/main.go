// A third party's Go program: it talks to Audit Ledger only through the client oapi-codegen generates
// from the published openapi.json (package api), as an outside developer would. It creates an event and
// a batch, lists them back a few at a time following next_cursor until has_more is false, and exports
// them as JSON and as CSV, checking at each step that exactly what it created comes back. It exits 1
// with the reason on stderr at the first thing that is not so, and prints a JSON summary on success.
//
//	AUDIT_LEDGER_URL=http://127.0.0.1:3000 AUDIT_LEDGER_API_KEY=alk_… ./oapiclient
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"auditledger/test/oapiclient/api"
)

const batchSize = 4
const pageLimit = 2

// The CSV export's columns, as the operation's description in openapi.json lists them.
var csvColumns = []string{"id", "timestamp", "actor_id", "actor_name", "action", "resource_type", "resource_id", "resource_name", "organization_id"}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "oapiclient:", err)
		os.Exit(1)
	}
}

func run() error {
	base, key := os.Getenv("AUDIT_LEDGER_URL"), os.Getenv("AUDIT_LEDGER_API_KEY")
	if base == "" || key == "" {
		return fmt.Errorf("set AUDIT_LEDGER_URL and AUDIT_LEDGER_API_KEY")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The document's servers entry is the relative "/v1".
	client, err := api.NewClientWithResponses(strings.TrimSuffix(base, "/")+"/v1", api.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+key)
		return nil
	}))
	if err != nil {
		return err
	}
	// This run's events are told from any others by their actor.
	actor := "oapi-go-" + randomHex(8)
	var created []string

	// One event.
	var one api.EventsCreateJSONRequestBody
	one.Actor.Id = actor
	one.Actor.Name = ptr("Go Client")
	one.Action = "invoice.created"
	one.Resource.Type = "invoice"
	one.Resource.Id = "inv_0"
	one.Metadata = &map[string]interface{}{"amount": 12.5, "via": "oapi-codegen"}
	single, err := client.EventsCreateWithResponse(ctx, nil, one)
	if err != nil {
		return fmt.Errorf("POST /events: %w", err)
	}
	if single.JSON201 == nil {
		return fmt.Errorf("POST /events: %d %s", single.StatusCode(), single.Body)
	}
	event, err := single.JSON201.Event.AsEvent()
	if err != nil {
		return fmt.Errorf("POST /events: event: %w", err)
	}
	receipt, err := single.JSON201.Ledger.AsLedgerReceipt()
	if err != nil {
		return fmt.Errorf("POST /events: ledger: %w", err)
	}
	if event.Id == "" || event.ActorId != actor || event.ActorName == nil || *event.ActorName != "Go Client" || event.ResourceId != "inv_0" || event.Metadata["via"] != "oapi-codegen" {
		return fmt.Errorf("POST /events answered another event: %s", single.Body)
	}
	if receipt.Seq < 1 || receipt.LeafIndex != receipt.Seq-1 || len(receipt.EventSha256) != 64 {
		return fmt.Errorf("POST /events: receipt %+v", receipt)
	}
	created = append(created, event.Id)

	// An invalid event: the error answer decodes into the document's Error schema.
	var invalid api.EventsCreateJSONRequestBody
	invalid.Actor.Id = actor
	invalid.Action = "invoice.created"
	invalid.Resource.Type = "invoice" // no resource.id
	refused, err := client.EventsCreateWithResponse(ctx, nil, invalid)
	if err != nil {
		return fmt.Errorf("POST /events (invalid): %w", err)
	}
	if refused.JSON400 == nil || !refused.JSON400.Code.Valid() || refused.JSON400.Message == "" {
		return fmt.Errorf("POST /events without resource.id: %d %s", refused.StatusCode(), refused.Body)
	}

	// A batch, with an Idempotency-Key header.
	batch := api.EventsCreateBatchJSONRequestBody{}
	for i := 1; i <= batchSize; i++ {
		var input api.CreateEventInput
		input.Actor.Id = actor
		input.Action = "invoice.paid"
		input.Resource.Type = "invoice"
		input.Resource.Id = fmt.Sprintf("inv_%d", i)
		batch.Events = append(batch.Events, input)
	}
	idempotencyKey := "oapi-go-batch-" + randomHex(8)
	many, err := client.EventsCreateBatchWithResponse(ctx, &api.EventsCreateBatchParams{IdempotencyKey: &idempotencyKey}, batch)
	if err != nil {
		return fmt.Errorf("POST /events/batch: %w", err)
	}
	if many.JSON201 == nil || len(many.JSON201.Events) != batchSize || len(many.JSON201.Ledger) != batchSize {
		return fmt.Errorf("POST /events/batch: %d %s", many.StatusCode(), many.Body)
	}
	for i, item := range many.JSON201.Events {
		e, err := item.AsEvent()
		if err != nil {
			return fmt.Errorf("POST /events/batch: events[%d]: %w", i, err)
		}
		r, err := many.JSON201.Ledger[i].AsLedgerReceipt()
		if err != nil {
			return fmt.Errorf("POST /events/batch: ledger[%d]: %w", i, err)
		}
		if e.Id == "" || e.ResourceId != fmt.Sprintf("inv_%d", i+1) || r.LeafIndex != r.Seq-1 {
			return fmt.Errorf("POST /events/batch: events[%d] is not what was sent: %s", i, many.Body)
		}
		created = append(created, e.Id)
	}

	// Every page, pageLimit events at a time, following next_cursor until has_more is false.
	limit := pageLimit
	params := api.EventsListParams{ActorId: &actor, Limit: &limit}
	var listed []api.Event
	pages := 0
	for {
		pages++
		if pages > 10*len(created) {
			return fmt.Errorf("GET /events: still has_more after %d pages", pages)
		}
		page, err := client.EventsListWithResponse(ctx, &params)
		if err != nil {
			return fmt.Errorf("GET /events (page %d): %w", pages, err)
		}
		if page.JSON200 == nil {
			return fmt.Errorf("GET /events (page %d): %d %s", pages, page.StatusCode(), page.Body)
		}
		if len(page.JSON200.Data) > pageLimit {
			return fmt.Errorf("GET /events: %d events on a page of limit %d", len(page.JSON200.Data), pageLimit)
		}
		listed = append(listed, page.JSON200.Data...)
		if !page.JSON200.HasMore {
			break
		}
		if page.JSON200.NextCursor == nil {
			return fmt.Errorf("GET /events: has_more with no next_cursor")
		}
		params.Cursor = page.JSON200.NextCursor
	}
	// Newest first: (timestamp, id) strictly decreasing, so no event twice.
	for i := 1; i < len(listed); i++ {
		a, b := listed[i-1], listed[i]
		if a.Timestamp < b.Timestamp || (a.Timestamp == b.Timestamp && a.Id <= b.Id) {
			return fmt.Errorf("GET /events: %s listed before %s", a.Id, b.Id)
		}
	}
	if err := sameIDs("GET /events", created, idsOf(listed)); err != nil {
		return err
	}

	// The JSON export.
	jsonFormat := api.EventsExportParamsFormat("json")
	exported, err := client.EventsExportWithResponse(ctx, &api.EventsExportParams{ActorId: &actor, Format: &jsonFormat})
	if err != nil {
		return fmt.Errorf("GET /events/export (json): %w", err)
	}
	if exported.JSON200 == nil {
		return fmt.Errorf("GET /events/export (json): %d %s", exported.StatusCode(), exported.Body)
	}
	if err := sameIDs("GET /events/export (json)", created, idsOf(*exported.JSON200)); err != nil {
		return err
	}

	// The CSV export: oapi-codegen leaves a text/csv answer as bytes, read here with encoding/csv.
	csvFormat := api.EventsExportParamsFormat("csv")
	exportedCsv, err := client.EventsExportWithResponse(ctx, &api.EventsExportParams{ActorId: &actor, Format: &csvFormat})
	if err != nil {
		return fmt.Errorf("GET /events/export (csv): %w", err)
	}
	if exportedCsv.StatusCode() != http.StatusOK || !strings.HasPrefix(exportedCsv.HTTPResponse.Header.Get("Content-Type"), "text/csv") {
		return fmt.Errorf("GET /events/export (csv): %d %s", exportedCsv.StatusCode(), exportedCsv.HTTPResponse.Header.Get("Content-Type"))
	}
	rows, err := csv.NewReader(bytes.NewReader(exportedCsv.Body)).ReadAll()
	if err != nil {
		return fmt.Errorf("GET /events/export (csv): %w", err)
	}
	if len(rows) == 0 || !slices.Equal(rows[0], csvColumns) {
		return fmt.Errorf("GET /events/export (csv): header %q", rows)
	}
	var csvIDs []string
	for _, row := range rows[1:] {
		if row[2] != actor {
			return fmt.Errorf("GET /events/export (csv): another actor's row %q", row)
		}
		csvIDs = append(csvIDs, row[0])
	}
	if err := sameIDs("GET /events/export (csv)", created, csvIDs); err != nil {
		return err
	}

	return json.NewEncoder(os.Stdout).Encode(map[string]interface{}{
		"created": created, "pages": pages, "export_json": len(*exported.JSON200), "export_csv": len(csvIDs),
	})
}

func idsOf(events []api.Event) []string {
	ids := make([]string, 0, len(events))
	for _, e := range events {
		ids = append(ids, e.Id)
	}
	return ids
}

// sameIDs fails unless got holds each created id exactly once and nothing else.
func sameIDs(what string, created, got []string) error {
	want, have := slices.Clone(created), slices.Clone(got)
	slices.Sort(want)
	slices.Sort(have)
	if !slices.Equal(want, have) {
		return fmt.Errorf("%s: got ids %v, created %v", what, got, created)
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func ptr[T any](v T) *T { return &v }
