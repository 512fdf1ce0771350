package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
)

func (h *Dashboards) StreamDatasetDashboard(ctx context.Context, req api.StreamDatasetDashboardRequestObject) (api.StreamDatasetDashboardResponseObject, error) {
	g, err := h.datasetForm(ctx, req.DatasetId, req.Params.UseAi, req.Params.Force)
	if err != nil {
		return nil, err
	}
	return &generationStream{h: h, ctx: ctx, g: g, regenerate: deref(req.Params.Force)}, nil
}

func (h *Dashboards) StreamViewDashboard(ctx context.Context, req api.StreamViewDashboardRequestObject) (api.StreamViewDashboardResponseObject, error) {
	g, err := h.viewForm(ctx, req.ProjectId, req.ViewId, req.Params.UseAi)
	if err != nil {
		return nil, err
	}
	return &generationStream{h: h, ctx: ctx, g: g, regenerate: deref(req.Params.Force)}, nil
}

func (h *Dashboards) StreamProjectDashboard(ctx context.Context, req api.StreamProjectDashboardRequestObject) (api.StreamProjectDashboardResponseObject, error) {
	g, err := h.projectForm(ctx, req.ProjectId, req.Body)
	if err != nil {
		return nil, err
	}
	return &generationStream{h: h, ctx: ctx, g: g}, nil
}

// generationStream is a generation reported as Server-Sent Events: everything refused before
// the work starts (validation, permissions, a dataset not ready) is an ordinary error; from
// then on each phase is a progress event, a heartbeat goes out while a step runs long, and
// the stream ends with complete or error. A client that goes away cancels the request's
// context, and with it the queries and the transaction: nothing is kept.
type generationStream struct {
	h          *Dashboards
	ctx        context.Context
	g          *generation
	regenerate bool

	mu    sync.Mutex
	w     http.ResponseWriter
	phase string
}

// streamHeartbeat is how often a quiet generation says it is still working.
const streamHeartbeat = 2 * time.Second

func (s *generationStream) VisitStreamDatasetDashboardResponse(w http.ResponseWriter) error {
	return s.run(w)
}
func (s *generationStream) VisitStreamProjectDashboardResponse(w http.ResponseWriter) error {
	return s.run(w)
}
func (s *generationStream) VisitStreamViewDashboardResponse(w http.ResponseWriter) error {
	return s.run(w)
}

func (s *generationStream) send(typ, message string, data any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"type": typ, "message": message, "data": data})
	_, _ = s.w.Write([]byte("data: " + string(b) + "\n\n"))
	_ = http.NewResponseController(s.w).Flush()
}

func (s *generationStream) run(w http.ResponseWriter) error {
	s.w = w
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(10 * time.Minute))
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if s.g.existing != nil && !s.regenerate {
		s.send("complete", "The "+s.g.kind+"'s dashboard already exists", dashboardJSON(s.g.existing, true, ptr(true)))
		return nil
	}
	// The heartbeat stops, and is known stopped, before the last event: nothing follows it.
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(streamHeartbeat)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-s.ctx.Done():
				return
			case <-t.C:
				s.mu.Lock()
				phase := s.phase
				s.mu.Unlock()
				s.send("heartbeat", "Still "+phase, map[string]any{"phase": phase})
			}
		}
	}()
	d, err := s.h.generate(s.ctx, s.g, func(phase, message string) {
		s.mu.Lock()
		s.phase = phase
		s.mu.Unlock()
		s.send("progress", message, map[string]any{"phase": phase})
	})
	close(stop)
	<-stopped
	if s.ctx.Err() != nil {
		s.h.Log.Info("dashboard generation abandoned by its client", "project_id", s.g.prj.ID)
		return nil
	}
	if err != nil {
		var ae *apierr.Error
		if !errors.As(err, &ae) {
			s.h.Log.Error("dashboard generation failed", "project_id", s.g.prj.ID, "error", err)
			ae = apierr.New(http.StatusInternalServerError, apierr.CodeInternalError, "internal error")
		}
		s.send("error", ae.Message, map[string]any{"code": ae.Status, "error": strings.ToLower(string(ae.Code)), "message": ae.Message})
		return nil
	}
	s.send("complete", "The dashboard is ready", dashboardJSON(d, true, ptr(true)))
	return nil
}
