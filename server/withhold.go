package server

import (
	"context"

	hearthv1 "github.com/hearth-memory/hearth/gen/hearth/v1"
	"github.com/hearth-memory/hearth/server/auth"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// withhold is the last interceptor of every unary call: a caller without
// read scope gets no record content back. Every hearth.v1.Record in its
// reply, and the current record a revision conflict carries, is cut down
// to what withheldRecord keeps (docs/running.md, "What a client without
// read scope sees"). A caller with read scope passes untouched.
func withhold(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if c, ok := auth.FromContext(ctx); !ok || c.Has(auth.Read) {
		return resp, err
	}
	if m, ok := resp.(proto.Message); ok && m != nil {
		withholdIn(m.ProtoReflect())
	}
	return resp, withholdErr(err)
}

// withheldRecord is what a caller without read scope sees of a record: its
// id, status and revision, the ids it supersedes or is superseded by, its
// evidence counts and effective confidence (the state evidence left), and
// when it last changed. Title, content, type, namespace, topics, anchors,
// writer, asserted confidence, source and creation time are withheld.
func withheldRecord(r *hearthv1.Record) *hearthv1.Record {
	return &hearthv1.Record{
		Id: r.GetId(), Status: r.GetStatus(), Revision: r.GetRevision(),
		Supersedes: r.GetSupersedes(), SupersededBy: r.GetSupersededBy(),
		EffectiveConfidence: r.GetEffectiveConfidence(),
		ProofCount:          r.GetProofCount(), RefutationCount: r.GetRefutationCount(),
		UpdatedAt: r.GetUpdatedAt(),
	}
}

var recordName = (&hearthv1.Record{}).ProtoReflect().Descriptor().FullName()

// withholdIn replaces every Record within m, at any depth, by its withheld
// form, in place.
func withholdIn(m protoreflect.Message) {
	if !m.IsValid() {
		return
	}
	if m.Descriptor().FullName() == recordName {
		if r, ok := m.Interface().(*hearthv1.Record); ok {
			kept := withheldRecord(r)
			proto.Reset(r)
			proto.Merge(r, kept)
		}
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			l := v.List()
			for i := range l.Len() {
				withholdIn(l.Get(i).Message())
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				withholdIn(mv.Message())
				return true
			})
		case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
			withholdIn(v.Message())
		}
		return true
	})
}

// withholdErr withholds the record an error's ErrorDetail carries (the
// current record of a revision conflict); the code, message, field and
// current revision stay.
func withholdErr(err error) error {
	st, ok := status.FromError(err)
	if err == nil || !ok {
		return err
	}
	details := st.Details()
	changed := false
	for _, d := range details {
		if ed, ok := d.(*hearthv1.ErrorDetail); ok && ed.GetRecord() != nil {
			ed.Record = withheldRecord(ed.GetRecord())
			changed = true
		}
	}
	if !changed {
		return err
	}
	kept := make([]protoadapt.MessageV1, 0, len(details))
	for _, d := range details {
		if m, ok := d.(protoadapt.MessageV1); ok {
			kept = append(kept, m)
		}
	}
	out, werr := status.New(st.Code(), st.Message()).WithDetails(kept...)
	if werr != nil {
		return status.Error(st.Code(), st.Message())
	}
	return out.Err()
}
