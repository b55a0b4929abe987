package main

// The worker-only mode, for the SIGKILL test of tests/sdk_kill.rs:
// `go-sdk-scenarios worker HOST:PORT NAME SLOW_SECONDS` runs the SDK's worker until killed
// (it prints "worker NAME started" once its listener is started). Its orchestration `TwoSteps`
// runs the activity `Step`, then `SlowStep`, which prints "slow step started by NAME" and sleeps
// SLOW_SECONDS; each activity answers which worker ran it ("WHAT by NAME"). Its orchestration
// `RewindMe` (for tests/sdk_rewind.rs) runs `Charge`, then `FailsOnce`, which fails its first
// run; both print "ACTIVITY ran by NAME" ("charge", "fails once") each time they run.

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
	// For tests/sdk_rewind.rs: `RewindMe` runs `Charge`, then `FailsOnce`, which fails its
	// first run in this process; each prints that it ran, so the test counts the runs.
	if err := r.AddOrchestratorN("RewindMe", func(ctx *task.OrchestrationContext) (any, error) {
		var charged, shipped string
		if err := ctx.CallActivity("Charge", task.WithActivityInput("charge")).Await(&charged); err != nil {
			return nil, err
		}
		if err := ctx.CallActivity("FailsOnce", task.WithActivityInput("ship")).Await(&shipped); err != nil {
			return nil, err
		}
		return []string{charged, shipped}, nil
	}); err != nil {
		return err
	}
	if err := r.AddActivityN("Charge", func(ctx task.ActivityContext) (any, error) {
		fmt.Printf("charge ran by %s\n", name)
		return by(ctx)
	}); err != nil {
		return err
	}
	failed := false
	if err := r.AddActivityN("FailsOnce", func(ctx task.ActivityContext) (any, error) {
		fmt.Printf("fails once ran by %s\n", name)
		if !failed {
			failed = true
			return nil, fmt.Errorf("the carrier is down")
		}
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
