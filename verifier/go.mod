module auditledger/verifier

go 1.26.0

require (
	github.com/transparency-dev/formats v0.1.1
	github.com/transparency-dev/merkle v0.0.2
	golang.org/x/mod v0.42.0
)

require github.com/gowebpki/jcs v1.0.1
