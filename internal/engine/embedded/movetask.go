package embedded

import (
	"context"
	"errors"

	"github.com/ferrymq/ferry/internal/engine"
)

// Placeholder until move tasks land in this file.
var errMoveTasksPending = errors.New("embedded: move tasks are not built yet")

func (e *Engine) StartMoveTask(ctx context.Context, t engine.MoveTask) (engine.MoveTask, error) {
	return engine.MoveTask{}, errMoveTasksPending
}

func (e *Engine) ListMoveTasks(ctx context.Context, account, name string) ([]engine.MoveTask, error) {
	return nil, errMoveTasksPending
}

func (e *Engine) CancelMoveTask(ctx context.Context, account, name, id string) (engine.MoveTask, error) {
	return engine.MoveTask{}, errMoveTasksPending
}
