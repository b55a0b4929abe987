package main

// The worker-only mode, for the SIGKILL test of tests/sdk_kill.rs:
// `go-sdk-scenarios worker HOST:PORT NAME SLOW_SECONDS` runs the SDK's worker until killed
// (it prints "worker NAME started" once its listener is started). Its orchestration `TwoSteps`
// runs the activity `Step`, then `SlowStep`, which prints "slow step started by NAME" and sleeps
// SLOW_SECONDS; each activity answers which worker ran it ("WHAT by NAME").

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/microsoft/durabletask-go/backend"
	"github.com/microsoft/durabletask-go/client"
	"github.com/microsoft/durabletask-go/task"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

func runWorker(addr, name, slowSeconds string) error {
	slow, err := strconv.Atoi(slowSeconds)
	if err != nil {
		return fmt.Errorf("SLOW_SECONDS %q: %w", slowSeconds, err)
	}
	by := func(ctx task.ActivityContext) (string, error) {
		var what string
		if err := ctx.GetInput(&what); err != nil {
			return "", err
		}
		return fmt.Sprintf("%s by %s", what, name), nil
	}
	r := task.NewTaskRegistry()
	if err := r.AddOrchestratorN("TwoSteps", func(ctx *task.OrchestrationContext) (any, error) {
		var first, second string
		if err := ctx.CallActivity("Step", task.WithActivityInput("step 1")).Await(&first); err != nil {
			return nil, err
		}
		if err := ctx.CallActivity("SlowStep", task.WithActivityInput("slow step")).Await(&second); err != nil {
			return nil, err
		}
		return []string{first, second}, nil
	}); err != nil {
		return err
	}
	if err := r.AddActivityN("Step", func(ctx task.ActivityContext) (any, error) {
		return by(ctx)
	}); err != nil {
		return err
	}
	if err := r.AddActivityN("SlowStep", func(ctx task.ActivityContext) (any, error) {
		fmt.Printf("slow step started by %s\n", name)
		time.Sleep(time.Duration(slow) * time.Second)
		return by(ctx)
	}); err != nil {
		return err
	}
	conn, err := grpc.Dial(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", addr, err)
	}
	defer conn.Close()
	c := client.NewTaskHubGrpcClient(conn, backend.DefaultLogger())
	if err := c.StartWorkItemListener(context.Background(), r); err != nil {
		return fmt.Errorf("starting the worker: %w", err)
	}
	fmt.Printf("worker %s started\n", name)
	select {}
}
