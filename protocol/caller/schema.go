package caller

import "github.com/mu-org/mu-plugins/protocol/schemacheck"

// The schema checks this package runs, on the embedded schema (compiled
// once by schemacheck). Variables only so the fuzz and unit tests can see
// which rule fires; production code never changes them.
var (
	schemaParams       = schemacheck.Params
	schemaResult       = schemacheck.Result
	schemaNotification = schemacheck.Notification
	schemaErrorObject  = schemacheck.ErrorObject
	schemaDeclaration  = schemacheck.Declaration
	schemaMessage      = schemacheck.Message
)
