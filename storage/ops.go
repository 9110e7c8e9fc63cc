package storage

import "github.com/hearth-memory/hearth/storage/internal/engine"

// opFlushUsage is the op of usage flushes, which never touch the records or
// their full-text index.
const opFlushUsage = "flush usage"

// The ops of writes that never touch the records (indexUntouched).
const (
	opRecordAsks       = "record asks"
	opQueueAnswer      = "queue answer"
	opDeclareQuestion  = "declare question"
	opAudit            = "audit"
	opRefuse           = "refuse"
	opPutEmbeddings    = "put embeddings"
	opStoreClientToken = "store client token"
	opEnqueueJob       = "enqueue job"
	opLeaseJob         = "lease job"
	opFailJob          = "fail job"
	opReleaseLeases    = "release leases"
	opCancelJobs       = "cancel jobs"
)

// indexUntouched holds the ops that never write the records or their
// full-text index: bookkeeping that runs beside searches (the usage and
// asks flushes run after every few searches, the answer worker's jobs on
// every idle poll). Their commits leave the write generation, and so the
// cached document frequencies, as they were. An op missing here only costs
// a recount; one listed here wrongly would serve stale frequencies, so only
// ops whose functions write none of records, records_fts or their
// triggers' tables belong here.
var indexUntouched = map[string]bool{
	opFlushUsage:       true,
	opRecordAsks:       true,
	opQueueAnswer:      true,
	opDeclareQuestion:  true,
	opEnqueueJob:       true,
	opLeaseJob:         true,
	opFailJob:          true,
	opReleaseLeases:    true,
	opCancelJobs:       true,
	opAudit:            true,
	opRefuse:           true,
	engine.OpRecovered: true,
	opPutEmbeddings:    true,
	opStoreClientToken: true,
	opAddModelUsage:    true,
	opModelBudget:      true,
	opDeferJob:         true,
	opStoreReceipt:     true,
}
