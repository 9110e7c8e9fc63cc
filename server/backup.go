package server

import (
	"context"
	"path/filepath"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// backupName is the file name of a backup taken at a time: sortable, and
// unique to the millisecond (backups are serialised).
const backupName = "hearth-20060102T150405.000Z.db"

// Backup writes a verified copy of the database into the backups folder
// (memory_backup, admin scope). One backup runs at a time; a second call
// waits for the first. Returns FAILED_PRECONDITION when the server has no
// backups folder configured, INTERNAL when the copy or a check fails.
func (a *adminService) Backup(ctx context.Context, _ *hearthv1.BackupRequest) (*hearthv1.BackupResponse, error) {
	if a.ops.backupDir == "" {
		return nil, status.Error(codes.FailedPrecondition, "this server has no backups folder")
	}
	a.ops.backup.Lock()
	defer a.ops.backup.Unlock()
	out := filepath.Join(a.ops.backupDir, a.db.Now().UTC().Format(backupName))
	info, err := a.db.Backup(ctx, out, client(ctx))
	if err != nil {
		return nil, toStatus(ctx, a.log, err)
	}
	a.log.InfoContext(ctx, "backup written", "path", info.Path, "records", info.Records, "bytes", info.Bytes, "ms", info.Took.Milliseconds())
	return &hearthv1.BackupResponse{
		Path: info.Path, Bytes: uint64(info.Bytes), Records: uint32(info.Records),
		TakenAt: ts(info.At), TookMs: uint32(info.Took.Milliseconds()),
	}, nil
}

// Metrics renders the server's metrics in the Prometheus text format
// (memory_metrics, admin scope; GET /metrics serves the same text).
func (a *adminService) Metrics(ctx context.Context, _ *hearthv1.MetricsRequest) (*hearthv1.MetricsResponse, error) {
	text, err := a.ops.metrics.Text()
	if err != nil {
		return nil, toStatus(ctx, a.log, err)
	}
	return &hearthv1.MetricsResponse{Text: text}, nil
}
