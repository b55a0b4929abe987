// Command go-sdk-scenarios runs the official Durable Task Go SDK
// (github.com/microsoft/durabletask-go v0.6.0, pinned in go.mod) as a WORKER and as a client
// against Taskhub's gRPC endpoint.
//
// Built by scripts/with-go-sdk.sh and run by tests/go_sdk_worker.rs as
// `go-sdk-scenarios HOST:PORT`, against a Taskhub worker whose registry is empty: every
// orchestration and activity below runs in this process, on the SDK's own worker
// (client.TaskHubGrpcClient.StartWorkItemListener), unchanged. Every check is an assertion; each
// scenario has its own deadline (60 s; 240 s for all); it prints `ok: NAME` or `FAILED: NAME: why`
// per scenario, then `all N Go SDK worker checks passed`, and exits non-zero if any failed.
//
// Not covered because the Go SDK v0.6.0 does not offer it:
//   - a version or tags on start (the start options are functions over an internal proto type,
//     and none sets them), nor the version in the orchestration's context;
//   - querying or listing instances, an instance's history, restart, rewind, purge by filter
//     (the client purges one instance by ID), raising an event with a deduplication ID;
//   - failure details read back by the client (FetchOrchestrationMetadata leaves
//     OrchestrationMetadata.FailureDetails empty): the details as the orchestrations see them are
//     asserted here, the stored ones by tests/go_sdk_worker.rs;
//   - reading back a suspension reason (the client sends one, nothing reads it);
//   - whenAny/whenAll: the only race between an event and a timer is WaitForSingleEvent with a
//     timeout, and a fan-in awaits each task;
//   - entities, health pings and declared concurrency: the worker's protos predate them (its
//     GetWorkItemsRequest is empty, it runs every work item in a goroutine of its own, and it logs
//     and drops any work item it does not know: the last check asserts it got none).
//
// Not asserted: an ID reuse policy with the action ERROR (the default) and a status list. ERROR
// is 0, which proto3 does not send, so the request is byte for byte what today's protocol reads
// as "these statuses are replaceable" (field 1, `replaceableStatus`; field 2, the action, is
// reserved there): the message alone cannot tell it from the Go SDK's "refuse if the status is
// listed". TERMINATE and IGNORE do reach the server (field 2 = 2 or 1) and are asserted.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/microsoft/durabletask-go/api"
	"github.com/microsoft/durabletask-go/backend"
	"github.com/microsoft/durabletask-go/client"
	"github.com/microsoft/durabletask-go/task"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// How long one scenario may take, waits included, and all of them together: the test runs this
// program for at most 300 s, and a run that overran would lose its output.
const (
	scenarioDeadline = 60 * time.Second
	runBudget        = 240 * time.Second
)

// What the activity sequence answers.
var hello = []string{"Hello Tokyo!", "Hello Seattle!", "Hello London!"}

// Activities.

func helloActivity(ctx task.ActivityContext) (any, error) {
	var city string
	if err := ctx.GetInput(&city); err != nil {
		return nil, err
	}
	return fmt.Sprintf("Hello %s!", city), nil
}

func double(ctx task.ActivityContext) (any, error) {
	var x int
	if err := ctx.GetInput(&x); err != nil {
		return nil, err
	}
	return 2 * x, nil
}

func boom(task.ActivityContext) (any, error) {
	return nil, errors.New("Kah-BOOOOM!!!")
}

// counts counts calls per key, for the activities that fail a number of times.
type counts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counts) add(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[key]++
	return c.n[key]
}

func (c *counts) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

var (
	attempts = &counts{n: map[string]int{}}
	calls    = &counts{n: map[string]int{}}
)

// flaky fails twice per key, then answers the attempt number.
func flaky(ctx task.ActivityContext) (any, error) {
	var key string
	if err := ctx.GetInput(&key); err != nil {
		return nil, err
	}
	n := attempts.add(key)
	if n < 3 {
		return nil, fmt.Errorf("attempt %d fails", n)
	}
	return n, nil
}

// failsOnce fails the first call per key, then answers.
func failsOnce(ctx task.ActivityContext) (any, error) {
	var key string
	if err := ctx.GetInput(&key); err != nil {
		return nil, err
	}
	if calls.add(key) == 1 {
		return nil, fmt.Errorf("first call for %s fails", key)
	}
	return "ok: " + key, nil
}

// Orchestrations.

func sequence(ctx *task.OrchestrationContext) (any, error) {
	out := []string{}
	for _, city := range []string{"Tokyo", "Seattle", "London"} {
		var s string
		if err := ctx.CallActivity("Hello", task.WithActivityInput(city)).Await(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func fanOut(ctx *task.OrchestrationContext) (any, error) {
	var n int
	if err := ctx.GetInput(&n); err != nil {
		return nil, err
	}
	tasks := make([]task.Task, n)
	for i := range n {
		tasks[i] = ctx.CallActivity("Double", task.WithActivityInput(i))
	}
	sum := 0
	for _, t := range tasks {
		var v int
		if err := t.Await(&v); err != nil {
			return nil, err
		}
		sum += v
	}
	return sum, nil
}

func childID(ctx *task.OrchestrationContext) string {
	return string(ctx.ID) + ":child"
}

func parent(ctx *task.OrchestrationContext) (any, error) {
	var child []string
	err := ctx.CallSubOrchestrator("Sequence", task.WithSubOrchestrationInstanceID(childID(ctx))).
		Await(&child)
	if err != nil {
		return nil, err
	}
	return map[string]any{"child": child}, nil
}

// sleeper sleeps on a durable timer for its input in seconds and answers the seconds that
// passed in orchestration time.
func sleeper(ctx *task.OrchestrationContext) (any, error) {
	var seconds float64
	if err := ctx.GetInput(&seconds); err != nil {
		return nil, err
	}
	start := ctx.CurrentTimeUtc
	if err := ctx.CreateTimer(time.Duration(seconds * float64(time.Second))).Await(nil); err != nil {
		return nil, err
	}
	return ctx.CurrentTimeUtc.Sub(start).Seconds(), nil
}

func waiter(ctx *task.OrchestrationContext) (any, error) {
	var v any
	if err := ctx.WaitForSingleEvent("Go", -1).Await(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// lateWaiter waits only after a timer: an event raised at once arrives before the wait.
func lateWaiter(ctx *task.OrchestrationContext) (any, error) {
	if err := ctx.CreateTimer(time.Second).Await(nil); err != nil {
		return nil, err
	}
	return waiter(ctx)
}

func failing(ctx *task.OrchestrationContext) (any, error) {
	if err := ctx.CallActivity("Boom").Await(nil); err != nil {
		return nil, err
	}
	return "not failed", nil
}

// catchFailure answers what it sees of a failed activity and a failed sub-orchestration.
func catchFailure(ctx *task.OrchestrationContext) (any, error) {
	activity := ctx.CallActivity("Boom").Await(nil)
	child := ctx.CallSubOrchestrator("Failing", task.WithSubOrchestrationInstanceID(childID(ctx))).
		Await(nil)
	if activity == nil || child == nil {
		return nil, fmt.Errorf("a failure was not reported: activity %v, child %v", activity, child)
	}
	return map[string]string{"activity": activity.Error(), "child": child.Error()}, nil
}

func tree(ctx *task.OrchestrationContext) (any, error) {
	var v any
	err := ctx.CallSubOrchestrator("Waiter", task.WithSubOrchestrationInstanceID(childID(ctx))).
		Await(&v)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// approval waits for `Approve` at most its input in seconds.
func approval(ctx *task.OrchestrationContext) (any, error) {
	var seconds float64
	if err := ctx.GetInput(&seconds); err != nil {
		return nil, err
	}
	var v string
	err := ctx.WaitForSingleEvent("Approve", time.Duration(seconds*float64(time.Second))).Await(&v)
	if errors.Is(err, task.ErrTaskCanceled) {
		return "timed out", nil
	} else if err != nil {
		return nil, err
	}
	return "approved: " + v, nil
}

// adder adds one `Add` event per execution, continuing as new and keeping the unread events.
func adder(ctx *task.OrchestrationContext) (any, error) {
	var total int
	if err := ctx.GetInput(&total); err != nil {
		return nil, err
	}
	var v int
	if err := ctx.WaitForSingleEvent("Add", -1).Await(&v); err != nil {
		return nil, err
	}
	total += v
	if total >= 10 {
		return total, nil
	}
	ctx.ContinueAsNew(total, task.WithKeepUnprocessedEvents())
	return nil, nil
}

// forgetful continues as new once, after a 2 s timer (`Extra`, raised at its start, arrives
// meanwhile and stays unread), without keeping unread events: the next execution waits 2 s for
// `Extra` and says whether one came.
func forgetful(ctx *task.OrchestrationContext) (any, error) {
	var generation int
	if err := ctx.GetInput(&generation); err != nil {
		return nil, err
	}
	if generation == 0 {
		if err := ctx.CreateTimer(2 * time.Second).Await(nil); err != nil {
			return nil, err
		}
		ctx.ContinueAsNew(1)
		return nil, nil
	}
	var v string
	err := ctx.WaitForSingleEvent("Extra", 2*time.Second).Await(&v)
	if errors.Is(err, task.ErrTaskCanceled) {
		return "dropped", nil
	} else if err != nil {
		return nil, err
	}
	return "kept: " + v, nil
}

var policy = &task.RetryPolicy{MaxAttempts: 3, InitialRetryInterval: 200 * time.Millisecond}

func retrying(ctx *task.OrchestrationContext) (any, error) {
	var n int
	err := ctx.CallActivity("Flaky", task.WithActivityInput(string(ctx.ID)),
		task.WithActivityRetryPolicy(policy)).Await(&n)
	if err != nil {
		return nil, err
	}
	return n, nil
}

// flakyChild fails its first execution (its activity fails, without a retry), succeeds the next.
func flakyChild(ctx *task.OrchestrationContext) (any, error) {
	var key string
	if err := ctx.GetInput(&key); err != nil {
		return nil, err
	}
	var v string
	if err := ctx.CallActivity("FailsOnce", task.WithActivityInput(key)).Await(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func retryingParent(ctx *task.OrchestrationContext) (any, error) {
	var child string
	err := ctx.CallSubOrchestrator("FlakyChild",
		task.WithSubOrchestratorInput(string(ctx.ID)),
		task.WithSubOrchestrationInstanceID(childID(ctx)),
		task.WithSubOrchestrationRetryPolicy(policy)).Await(&child)
	if err != nil {
		return nil, err
	}
	return map[string]string{"child": child}, nil
}

// statuses sets a custom status as the Go SDK's users do (any text, not JSON), twice.
func statuses(ctx *task.OrchestrationContext) (any, error) {
	ctx.SetCustomStatus("step 1")
	if err := ctx.CreateTimer(100 * time.Millisecond).Await(nil); err != nil {
		return nil, err
	}
	ctx.SetCustomStatus("step 2")
	return "done", nil
}

// startTime answers the orchestration time of its first turn, in Unix milliseconds.
func startTime(ctx *task.OrchestrationContext) (any, error) {
	return ctx.CurrentTimeUtc.UnixMilli(), nil
}

// logger is the SDK's default logger, noting what the worker reports as going wrong: a
// completion Taskhub did not take, a work item the SDK does not know.
type logger struct {
	backend.Logger
	mu              sync.Mutex
	completionFails []string
	unknownItems    []string
}

func (l *logger) Warnf(format string, v ...any) {
	if strings.HasPrefix(format, "received unknown work item type") {
		l.mu.Lock()
		l.unknownItems = append(l.unknownItems, fmt.Sprintf(format, v...))
		l.mu.Unlock()
	}
	l.Logger.Warnf(format, v...)
}

func (l *logger) Errorf(format string, v ...any) {
	if strings.HasPrefix(format, "failed to complete") {
		l.mu.Lock()
		l.completionFails = append(l.completionFails, fmt.Sprintf(format, v...))
		l.mu.Unlock()
	}
	l.Logger.Errorf(format, v...)
}

func (l *logger) noted() (completionFails, unknownItems []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.completionFails...), append([]string(nil), l.unknownItems...)
}

// hub is the client side: the SDK's client and the starts made ahead of the scenarios.
type hub struct {
	c       *client.TaskHubGrpcClient
	started map[string]error
	end     time.Time // when the run's budget is spent
}

// start starts orchestration `name` as instance `id`, noting a failure for the scenario that
// reads the instance.
func (h *hub) start(name, id string, opts ...api.NewOrchestrationOptions) {
	ctx, cancel := within(h.end)
	defer cancel()
	opts = append([]api.NewOrchestrationOptions{api.WithInstanceID(api.InstanceID(id))}, opts...)
	_, err := h.c.ScheduleNewOrchestration(ctx, name, opts...)
	h.started[id] = err
}

// finish waits for `id` to end.
func (h *hub) finish(ctx context.Context, id string) (*api.OrchestrationMetadata, error) {
	if err := h.started[id]; err != nil {
		return nil, fmt.Errorf("starting %s: %w", id, err)
	}
	md, err := h.c.WaitForOrchestrationCompletion(ctx, api.InstanceID(id))
	if err != nil {
		return nil, fmt.Errorf("waiting for %s to finish: %w", id, err)
	}
	return md, nil
}

// output waits for `id` to complete and decodes its output into `v`.
func (h *hub) output(ctx context.Context, id string, v any) error {
	md, err := h.finish(ctx, id)
	if err != nil {
		return err
	}
	if md.RuntimeStatus != api.RUNTIME_STATUS_COMPLETED {
		return fmt.Errorf("%s ended %s, not COMPLETED (output %q)", id, md.RuntimeStatus,
			md.SerializedOutput)
	}
	if err := json.Unmarshal([]byte(md.SerializedOutput), v); err != nil {
		return fmt.Errorf("the output of %s, %q: %w", id, md.SerializedOutput, err)
	}
	return nil
}

// outputIs waits for `id` to complete with the output `want` (compared as decoded JSON).
func (h *hub) outputIs(ctx context.Context, id string, want any) error {
	got := reflect.New(reflect.TypeOf(want))
	if err := h.output(ctx, id, got.Interface()); err != nil {
		return err
	}
	return equal("the output of "+id, got.Elem().Interface(), want)
}

// endsAs waits for `id` to end with status `want`.
func (h *hub) endsAs(ctx context.Context, id string, want api.OrchestrationStatus) (*api.OrchestrationMetadata, error) {
	md, err := h.finish(ctx, id)
	if err != nil {
		return nil, err
	}
	return md, equal("the status of "+id, md.RuntimeStatus, want)
}

func (h *hub) status(ctx context.Context, id string) (api.OrchestrationStatus, error) {
	md, err := h.c.FetchOrchestrationMetadata(ctx, api.InstanceID(id))
	if err != nil {
		return 0, fmt.Errorf("fetching %s: %w", id, err)
	}
	return md.RuntimeStatus, nil
}

// becomes waits until `id` has status `want`.
func (h *hub) becomes(ctx context.Context, id string, want api.OrchestrationStatus) error {
	for {
		got, err := h.status(ctx, id)
		if err != nil && !errors.Is(err, api.ErrInstanceNotFound) {
			return err
		}
		if err == nil && got == want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s never became %s (last %s, %v): %w", id, want, got, err, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// gone asserts that `id` does not exist.
func (h *hub) gone(ctx context.Context, id string) error {
	md, err := h.c.FetchOrchestrationMetadata(ctx, api.InstanceID(id))
	if !errors.Is(err, api.ErrInstanceNotFound) {
		return fmt.Errorf("%s should not exist: got %+v, %v", id, md, err)
	}
	return nil
}

func equal(what string, got, want any) error {
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("%s: got %#v, want %#v", what, got, want)
	}
	return nil
}

func check(ok bool, format string, v ...any) error {
	if !ok {
		return fmt.Errorf(format, v...)
	}
	return nil
}

// grpcCode is the gRPC status code in `err` (wrapped by the SDK), or OK if none.
func grpcCode(err error) codes.Code {
	var s interface{ GRPCStatus() *status.Status }
	if errors.As(err, &s) {
		return s.GRPCStatus().Code()
	}
	return codes.OK
}

// first returns the first error of `errs`, evaluated in order.
func first(steps ...func() error) error {
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// within is a context for one scenario or call: scenarioDeadline, or less if the run's budget
// ends before.
func within(end time.Time) (context.Context, context.CancelFunc) {
	deadline := time.Now().Add(scenarioDeadline)
	if deadline.After(end) {
		deadline = end
	}
	return context.WithDeadline(context.Background(), deadline)
}

type results struct {
	end    time.Time // when the run's budget is spent
	done   []string
	failed []string
}

func (r *results) scenario(name string, body func(ctx context.Context) error) {
	ctx, cancel := within(r.end)
	defer cancel()
	if ctx.Err() != nil {
		r.failed = append(r.failed, name+": not run, the run's budget is spent")
		fmt.Printf("FAILED: %s: not run, the run's budget (%v) is spent\n", name, runBudget)
		return
	}
	r.run(ctx, name, body)
}

// last runs a check that does not wait, whatever is left of the run's budget.
func (r *results) last(name string, body func(ctx context.Context) error) {
	ctx, cancel := within(time.Now().Add(scenarioDeadline))
	defer cancel()
	r.run(ctx, name, body)
}

func (r *results) run(ctx context.Context, name string, body func(ctx context.Context) error) {
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("panic: %v", p)
			}
		}()
		return body(ctx)
	}()
	if err != nil {
		r.failed = append(r.failed, fmt.Sprintf("%s: %v", name, err))
		fmt.Printf("FAILED: %s: %v\n", name, err)
		return
	}
	r.done = append(r.done, name)
	fmt.Printf("ok: %s\n", name)
}

func main() {
	// The worker-only mode (worker_mode.go).
	if len(os.Args) == 5 && os.Args[1] == "worker" {
		if err := runWorker(os.Args[2], os.Args[3], os.Args[4]); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go-sdk-scenarios HOST:PORT")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
}

func run(addr string) error {
	res := results{end: time.Now().Add(runBudget)}
	r := task.NewTaskRegistry()
	for name, o := range map[string]task.Orchestrator{
		"Sequence": sequence, "FanOut": fanOut, "Parent": parent, "Sleeper": sleeper,
		"Waiter": waiter, "LateWaiter": lateWaiter, "Failing": failing,
		"CatchFailure": catchFailure, "Tree": tree, "Approval": approval, "Adder": adder,
		"Forgetful": forgetful, "Retrying": retrying, "FlakyChild": flakyChild,
		"RetryingParent": retryingParent, "Statuses": statuses, "StartTime": startTime,
	} {
		if err := r.AddOrchestratorN(name, o); err != nil {
			return err
		}
	}
	for name, a := range map[string]task.Activity{
		"Hello": helloActivity, "Double": double, "Boom": boom, "Flaky": flaky,
		"FailsOnce": failsOnce,
	} {
		if err := r.AddActivityN(name, a); err != nil {
			return err
		}
	}

	conn, err := grpc.Dial(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", addr, err)
	}
	defer conn.Close()
	log := &logger{Logger: backend.DefaultLogger()}
	c := client.NewTaskHubGrpcClient(conn, log)
	listening, stopListening := context.WithCancel(context.Background())
	defer stopListening()
	if err := c.StartWorkItemListener(listening, r); err != nil {
		return fmt.Errorf("starting the worker: %w", err)
	}

	h := &hub{c: c, started: map[string]error{}, end: res.end}
	h.start("Sequence", "go-seq")
	h.start("FanOut", "go-fan", api.WithInput(50))
	h.start("Parent", "go-par")
	h.start("Sleeper", "go-sleep", api.WithInput(1))
	h.start("Failing", "go-fail")
	h.start("CatchFailure", "go-catch")
	h.start("LateWaiter", "go-early-event")
	if h.started["go-early-event"] == nil {
		ctx, cancel := within(h.end)
		h.started["go-early-event"] = c.RaiseEvent(ctx, "go-early-event", "Go",
			api.WithEventPayload("early"))
		cancel()
	}
	h.start("Approval", "go-approve-yes", api.WithInput(30))
	h.start("Approval", "go-approve-no", api.WithInput(1))
	h.start("Retrying", "go-retry")
	h.start("RetryingParent", "go-sub-retry")
	h.start("Statuses", "go-status")

	res.scenario("activity sequence", func(ctx context.Context) error {
		return h.outputIs(ctx, "go-seq", hello)
	})
	res.scenario("fan-out/fan-in (50 activities)", func(ctx context.Context) error {
		return h.outputIs(ctx, "go-fan", 2*(49*50/2))
	})
	res.scenario("sub-orchestration", func(ctx context.Context) error {
		return first(
			func() error { return h.outputIs(ctx, "go-par", map[string][]string{"child": hello}) },
			func() error { return h.outputIs(ctx, "go-par:child", hello) },
		)
	})
	res.scenario("durable timer", func(ctx context.Context) error {
		var seconds float64
		if err := h.output(ctx, "go-sleep", &seconds); err != nil {
			return err
		}
		return check(seconds >= 1, "the timer of 1 s fired after %v s", seconds)
	})
	res.scenario("external event raised before the wait", func(ctx context.Context) error {
		return h.outputIs(ctx, "go-early-event", "early")
	})
	res.scenario("external event raised after the wait", func(ctx context.Context) error {
		h.start("Waiter", "go-wait")
		return first(
			func() error {
				md, err := c.WaitForOrchestrationStart(ctx, "go-wait")
				if err != nil {
					return fmt.Errorf("waiting for go-wait to start: %w", err)
				}
				return equal("the status of go-wait once started", md.RuntimeStatus,
					api.RUNTIME_STATUS_RUNNING)
			},
			func() error {
				return c.RaiseEvent(ctx, "go-wait", "Go", api.WithEventPayload(map[string]bool{"approved": true}))
			},
			func() error { return h.outputIs(ctx, "go-wait", map[string]bool{"approved": true}) },
		)
	})
	res.scenario("wait for an event with a timeout (event first, timeout first)", func(ctx context.Context) error {
		return first(
			func() error {
				return c.RaiseEvent(ctx, "go-approve-yes", "Approve", api.WithEventPayload("ok"))
			},
			func() error { return h.outputIs(ctx, "go-approve-yes", "approved: ok") },
			func() error { return h.outputIs(ctx, "go-approve-no", "timed out") },
		)
	})
	res.scenario("continue-as-new keeping unread events", func(ctx context.Context) error {
		h.start("Adder", "go-adder", api.WithInput(0))
		for _, v := range []int{1, 2, 3, 4} {
			if err := c.RaiseEvent(ctx, "go-adder", "Add", api.WithEventPayload(v)); err != nil {
				return err
			}
		}
		return h.outputIs(ctx, "go-adder", 10)
	})
	res.scenario("continue-as-new without keeping unread events", func(ctx context.Context) error {
		h.start("Forgetful", "go-forget", api.WithInput(0))
		return first(
			func() error {
				return c.RaiseEvent(ctx, "go-forget", "Extra", api.WithEventPayload("x"))
			},
			func() error { return h.outputIs(ctx, "go-forget", "dropped") },
		)
	})
	res.scenario("activity retries with a policy (two failures, then success)", func(ctx context.Context) error {
		return first(
			func() error { return h.outputIs(ctx, "go-retry", 3) },
			func() error { return equal("attempts", attempts.get("go-retry"), 3) },
		)
	})
	res.scenario("sub-orchestration retries with a policy (fails once, then succeeds)", func(ctx context.Context) error {
		return first(
			func() error {
				return h.outputIs(ctx, "go-sub-retry", map[string]string{"child": "ok: go-sub-retry"})
			},
			func() error { return h.outputIs(ctx, "go-sub-retry:child", "ok: go-sub-retry") },
			func() error { return equal("calls of the child's activity", calls.get("go-sub-retry"), 2) },
		)
	})
	res.scenario("failure with its details", func(ctx context.Context) error {
		seen := map[string]string{}
		return first(
			func() error {
				_, err := h.endsAs(ctx, "go-fail", api.RUNTIME_STATUS_FAILED)
				return err
			},
			func() error { return h.output(ctx, "go-catch", &seen) },
			func() error {
				return check(strings.Contains(seen["activity"], "Kah-BOOOOM!!!"),
					"the activity's failure as the orchestration saw it: %q", seen["activity"])
			},
			func() error {
				return check(strings.Contains(seen["child"], "Kah-BOOOOM!!!"),
					"the sub-orchestration's failure as its parent saw it: %q", seen["child"])
			},
			func() error {
				_, err := h.endsAs(ctx, "go-catch:child", api.RUNTIME_STATUS_FAILED)
				return err
			},
		)
	})
	res.scenario("custom status", func(ctx context.Context) error {
		return first(
			func() error { return h.outputIs(ctx, "go-status", "done") },
			func() error {
				md, err := c.FetchOrchestrationMetadata(ctx, "go-status")
				if err != nil {
					return err
				}
				return equal("the custom status", md.SerializedCustomStatus, "step 2")
			},
		)
	})
	res.scenario("suspend and resume", func(ctx context.Context) error {
		h.start("Waiter", "go-susp")
		return first(
			func() error { return h.becomes(ctx, "go-susp", api.RUNTIME_STATUS_RUNNING) },
			func() error { return c.SuspendOrchestration(ctx, "go-susp", "maintenance") },
			func() error { return h.becomes(ctx, "go-susp", api.RUNTIME_STATUS_SUSPENDED) },
			func() error { return c.RaiseEvent(ctx, "go-susp", "Go", api.WithEventPayload(7)) },
			func() error {
				time.Sleep(500 * time.Millisecond)
				got, err := h.status(ctx, "go-susp")
				if err != nil {
					return err
				}
				return equal("the status of go-susp 500 ms after an event", got,
					api.RUNTIME_STATUS_SUSPENDED)
			},
			func() error { return c.ResumeOrchestration(ctx, "go-susp", "done") },
			func() error { return h.outputIs(ctx, "go-susp", 7) },
		)
	})
	res.scenario("terminate (recursive and not)", func(ctx context.Context) error {
		h.start("Tree", "go-term")
		h.start("Tree", "go-term1")
		return first(
			func() error { return h.becomes(ctx, "go-term:child", api.RUNTIME_STATUS_RUNNING) },
			func() error {
				return c.TerminateOrchestration(ctx, "go-term", api.WithOutput("stop"),
					api.WithRecursiveTerminate(true))
			},
			func() error {
				md, err := h.endsAs(ctx, "go-term", api.RUNTIME_STATUS_TERMINATED)
				if err != nil {
					return err
				}
				return equal("the output of go-term", md.SerializedOutput, `"stop"`)
			},
			func() error {
				_, err := h.endsAs(ctx, "go-term:child", api.RUNTIME_STATUS_TERMINATED)
				return err
			},
			// Not recursive: the parent ends, its child keeps running and can still finish.
			func() error { return h.becomes(ctx, "go-term1:child", api.RUNTIME_STATUS_RUNNING) },
			func() error {
				return c.TerminateOrchestration(ctx, "go-term1", api.WithOutput("stop"),
					api.WithRecursiveTerminate(false))
			},
			func() error {
				_, err := h.endsAs(ctx, "go-term1", api.RUNTIME_STATUS_TERMINATED)
				return err
			},
			func() error {
				got, err := h.status(ctx, "go-term1:child")
				if err != nil {
					return err
				}
				return equal("the status of the child of a parent terminated alone", got,
					api.RUNTIME_STATUS_RUNNING)
			},
			func() error {
				return c.RaiseEvent(ctx, "go-term1:child", "Go", api.WithEventPayload("alone"))
			},
			func() error { return h.outputIs(ctx, "go-term1:child", "alone") },
		)
	})
	res.scenario("fetch metadata (payloads or not, a missing instance, a generated ID)", func(ctx context.Context) error {
		return first(
			func() error {
				md, err := c.FetchOrchestrationMetadata(ctx, "go-fan")
				if err != nil {
					return err
				}
				return first(
					func() error { return equal("InstanceID", md.InstanceID, api.InstanceID("go-fan")) },
					func() error { return equal("Name", md.Name, "FanOut") },
					func() error { return equal("RuntimeStatus", md.RuntimeStatus, api.RUNTIME_STATUS_COMPLETED) },
					func() error { return equal("SerializedInput", md.SerializedInput, "50") },
					func() error { return equal("SerializedOutput", md.SerializedOutput, "2450") },
					func() error {
						return check(!md.CreatedAt.IsZero() && !md.LastUpdatedAt.Before(md.CreatedAt),
							"created %v, last updated %v", md.CreatedAt, md.LastUpdatedAt)
					},
				)
			},
			func() error {
				md, err := c.FetchOrchestrationMetadata(ctx, "go-fan", api.WithFetchPayloads(false))
				if err != nil {
					return err
				}
				return first(
					func() error { return equal("RuntimeStatus", md.RuntimeStatus, api.RUNTIME_STATUS_COMPLETED) },
					func() error { return equal("SerializedInput without payloads", md.SerializedInput, "") },
					func() error { return equal("SerializedOutput without payloads", md.SerializedOutput, "") },
				)
			},
			func() error { return h.gone(ctx, "go-no-such-instance") },
			func() error {
				id, err := c.ScheduleNewOrchestration(ctx, "Sequence")
				if err != nil {
					return err
				}
				return h.outputIs(ctx, string(id), hello)
			},
		)
	})
	res.scenario("scheduled start time", func(ctx context.Context) error {
		startAt := time.Now().Add(1500 * time.Millisecond)
		h.start("StartTime", "go-later", api.WithStartTime(startAt))
		var firstTurn int64
		return first(
			func() error {
				if err := h.started["go-later"]; err != nil {
					return err
				}
				got, err := h.status(ctx, "go-later")
				if err != nil {
					return err
				}
				return equal("the status before the start time", got, api.RUNTIME_STATUS_PENDING)
			},
			func() error { return h.output(ctx, "go-later", &firstTurn) },
			func() error {
				return check(firstTurn >= startAt.UnixMilli()-50,
					"the first turn ran at %d, before the start time %d", firstTurn, startAt.UnixMilli())
			},
		)
	})
	res.scenario("ID reuse: a second start refused, TERMINATE replaces a running instance", func(ctx context.Context) error {
		h.start("Waiter", "go-reuse")
		var before *api.OrchestrationMetadata
		return first(
			func() error {
				var err error
				before, err = c.WaitForOrchestrationStart(ctx, "go-reuse")
				return err
			},
			func() error {
				_, err := c.ScheduleNewOrchestration(ctx, "Sequence", api.WithInstanceID("go-reuse"))
				return equal(fmt.Sprintf("the code of a second start without a policy (%v)", err),
					grpcCode(err), codes.AlreadyExists)
			},
			func() error {
				return equal("the instance's status after a refused start", mustStatus(ctx, h, "go-reuse"),
					api.RUNTIME_STATUS_RUNNING)
			},
			func() error {
				_, err := c.ScheduleNewOrchestration(ctx, "Sequence", api.WithInstanceID("go-reuse"),
					api.WithOrchestrationIdReusePolicy(&api.OrchestrationIdReusePolicy{
						Action: api.REUSE_ID_ACTION_TERMINATE,
						OperationStatus: []api.OrchestrationStatus{api.RUNTIME_STATUS_RUNNING,
							api.RUNTIME_STATUS_COMPLETED, api.RUNTIME_STATUS_PENDING},
					}))
				return err
			},
			func() error { return h.outputIs(ctx, "go-reuse", hello) },
			func() error {
				md, err := c.FetchOrchestrationMetadata(ctx, "go-reuse")
				if err != nil {
					return err
				}
				return first(
					func() error { return equal("the replacement's name", md.Name, "Sequence") },
					func() error {
						return check(md.CreatedAt.After(before.CreatedAt),
							"the replacement was created at %v, the first at %v", md.CreatedAt, before.CreatedAt)
					},
				)
			},
		)
	})
	res.scenario("ID reuse: IGNORE keeps a running instance", func(ctx context.Context) error {
		h.start("Waiter", "go-keep")
		var before *api.OrchestrationMetadata
		err := first(
			func() error {
				var err error
				before, err = c.WaitForOrchestrationStart(ctx, "go-keep")
				return err
			},
			func() error {
				_, err := c.ScheduleNewOrchestration(ctx, "Sequence", api.WithInstanceID("go-keep"),
					api.WithOrchestrationIdReusePolicy(&api.OrchestrationIdReusePolicy{
						Action:          api.REUSE_ID_ACTION_IGNORE,
						OperationStatus: []api.OrchestrationStatus{api.RUNTIME_STATUS_RUNNING},
					}))
				if err != nil {
					return fmt.Errorf("a start with IGNORE for RUNNING: %w", err)
				}
				return nil
			},
			func() error {
				md, err := c.FetchOrchestrationMetadata(ctx, "go-keep")
				if err != nil {
					return err
				}
				const after = " after a start with IGNORE for RUNNING"
				return first(
					func() error { return equal("the name"+after, md.Name, "Waiter") },
					func() error { return equal("the status"+after, md.RuntimeStatus, api.RUNTIME_STATUS_RUNNING) },
					func() error {
						return check(md.CreatedAt.Equal(before.CreatedAt), "created at %v%s, at %v before",
							md.CreatedAt, after, before.CreatedAt)
					},
				)
			},
		)
		// Let it end whatever happened.
		_ = c.TerminateOrchestration(ctx, "go-keep")
		return err
	})
	res.scenario("purge (one, recursive)", func(ctx context.Context) error {
		return first(
			func() error { return h.outputIs(ctx, "go-par", map[string][]string{"child": hello}) },
			func() error {
				return c.PurgeOrchestrationState(ctx, "go-par", api.WithRecursivePurge(true))
			},
			func() error { return h.gone(ctx, "go-par") },
			func() error { return h.gone(ctx, "go-par:child") },
			func() error {
				err := c.PurgeOrchestrationState(ctx, "go-par")
				return check(errors.Is(err, api.ErrInstanceNotFound),
					"purging a purged instance: %v, not ErrInstanceNotFound", err)
			},
		)
	})
	res.last("every completion taken, no work item the Go SDK does not know", func(context.Context) error {
		completionFails, unknownItems := log.noted()
		return first(
			func() error {
				return check(len(completionFails) == 0, "%d completions refused, the first: %s",
					len(completionFails), strings.Join(completionFails[:min(1, len(completionFails))], ""))
			},
			func() error {
				return check(len(unknownItems) == 0, "%d work items the SDK does not know, the first: %s",
					len(unknownItems), strings.Join(unknownItems[:min(1, len(unknownItems))], ""))
			},
		)
	})

	stopListening()
	if len(res.failed) > 0 {
		return fmt.Errorf("FAILED scenarios:\n%s", strings.Join(res.failed, "\n"))
	}
	fmt.Printf("all %d Go SDK worker checks passed\n", len(res.done))
	return nil
}

// mustStatus is the status of `id`, or -1 if it cannot be read.
func mustStatus(ctx context.Context, h *hub, id string) api.OrchestrationStatus {
	s, err := h.status(ctx, id)
	if err != nil {
		return -1
	}
	return s
}
