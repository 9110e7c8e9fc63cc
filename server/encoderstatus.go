package server

import (
	"context"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// encoderStatus reports the encoder and the record vectors for
// memory_status: configured or not, live or down, model and snapshot, and
// live records by the state of their vector (current, stale, missing),
// which are left out while the vector index cannot tell them.
func (s *Server) encoderStatus(ctx context.Context) (*hearthv1.EncoderStatus, error) {
	if s.encoder == nil {
		return &hearthv1.EncoderStatus{}, nil
	}
	st := s.encoder.Status()
	out := &hearthv1.EncoderStatus{
		Configured: true, Live: st.Live, Url: st.URL, Model: st.Model, Snapshot: st.Snapshot, Dim: uint32(st.Dim),
		Error: st.ProbeError,
	}
	if out.Error == "" {
		out.Error = st.LastError
	}
	if st.Probed {
		out.LastProbe = timestamppb.New(st.LastProbe)
	}
	if err := s.vectors.Sync(ctx); err != nil {
		return nil, err
	}
	if c, ok := s.vectors.Counts(); ok {
		out.VectorsCurrent, out.VectorsStale, out.VectorsMissing = proto.Uint32(uint32(c.Current)), proto.Uint32(uint32(c.Stale)), proto.Uint32(uint32(c.Missing))
	}
	return out, nil
}
