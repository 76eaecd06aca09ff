// Package api is the client oapi-codegen generates from the service's openapi.json, into
// client.gen.go (not committed: test/client/thirdPartyGenerators.test.ts generates it at test time,
// in a copy of this module). To generate it here, from the module's directory:
//
//	go tool oapi-codegen -config oapi-codegen.yaml ../../../../openapi.json
package api
