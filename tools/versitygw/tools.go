//go:build tools

// Pins Versity's S3 gateway (its POSIX backend), the S3-compatible server the log-stream tests write to:
// `go build -o <bin> github.com/versity/versitygw/cmd/versitygw` from this module.
package tools

import _ "github.com/versity/versitygw/cmd/versitygw"
