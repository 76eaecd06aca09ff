module auditledger/verifier

go 1.26.0

require (
	github.com/transparency-dev/formats v0.1.2-0.20260710124811-af9e607161b6
	github.com/transparency-dev/merkle v0.0.3-0.20260707140218-77df88e508fa
	golang.org/x/mod v0.42.0
)

require (
	github.com/gowebpki/jcs v1.0.1
	github.com/transparency-dev/tessera v1.0.4
	github.com/transparency-dev/witness v0.0.0-20260720115447-2e1c6971d19e
)

require (
	filippo.io/mldsa v0.0.0-20260215214346-43d0283efc3e // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/otel v1.44.0 // indirect
	go.opentelemetry.io/otel/metric v1.44.0 // indirect
	go.opentelemetry.io/otel/trace v1.44.0 // indirect
	golang.org/x/crypto v0.53.0 // indirect
	golang.org/x/sync v0.21.0 // indirect
	k8s.io/klog/v2 v2.140.0 // indirect
)
