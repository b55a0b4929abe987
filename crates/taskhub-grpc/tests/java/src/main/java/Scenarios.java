// The official Durable Task Java SDK (com.microsoft:durabletask-client 1.5.0, pinned in pom.xml)
// as a WORKER and as a client against Taskhub's gRPC endpoint.
//
// Built by scripts/with-java-sdk.sh and run by tests/java_sdk_worker.rs as
// `java Scenarios HOST:PORT` (the classpath in CLASSPATH), against a Taskhub worker whose registry
// is empty: every orchestration and activity below runs in this process, on the SDK's own
// DurableTaskGrpcWorker, unchanged, built as its users build it (`.port(PORT)`: 1.5.0 always
// connects to localhost, so HOST must be a loopback address). Every check is an assertion; each
// scenario has its own deadline; it prints `ok: NAME` or `FAILED: NAME: why` per scenario, then
// `all N Java SDK worker checks passed`, and exits non-zero if any failed.
//
// The 1.5.0 worker sends an empty GetWorkItemsRequest (no capacity), runs every orchestration
// turn and activity inline on its stream's thread, one at a time, completes without a completion
// token, and on any error from a completion call leaves its loop and reconnects after 5 s. The
// scenario "a 20 s activity while 50 orchestrations wait" is the slow-activity case of issue 34
// item 2, scaled for a test; the last check asserts that no completion was refused, the worker
// never reconnected, and no work item it does not know (a health ping, an entity batch) reached it.
//
// What 1.5.0 gets wrong itself, worked around here: when an orchestration continues as new in the
// turn that delivered the event it read, it carries that event over again besides the unread ones
// (TaskOrchestrationExecutor.addCarryoverEvents takes every eventRaised of the turn's new events;
// fixed in 1.5.1, durabletask-java#183), and it carries them in a HashSet's order. The Adder
// continues as new after a timer, in a turn of its own, and sums its events, whose order is lost.
//
// Not covered because the Java SDK 1.5.0 does not offer it:
//   - recursive terminate and recursive purge (its TerminateRequest and PurgeInstancesRequest
//     have no `recursive`): terminate is asserted not recursive, purge by ID for one instance;
//   - reading back a version (it sends one on start, but neither the orchestration context nor
//     OrchestrationMetadata has it), tags, an ID reuse policy on start;
//   - an instance's history, listing instance IDs, rewind, raising an event with an ID;
//   - restart as the RestartInstance call: its restartInstance reads the instance and starts it
//     again itself (GetInstance + StartInstance), which is what is asserted;
//   - reading back a suspension reason (the client sends one, nothing reads it);
//   - entities, health pings, declared concurrency and completion tokens (its protos predate
//     them: an unknown work item is logged and dropped, which the last check asserts never
//     happened).
// createTaskHub/deleteTaskHub are offered but not run here (they would empty the hub under the
// other scenarios); tests/hub_wipe.rs covers those calls.

import com.microsoft.durabletask.DurableTaskClient;
import com.microsoft.durabletask.DurableTaskGrpcClientBuilder;
import com.microsoft.durabletask.DurableTaskGrpcWorker;
import com.microsoft.durabletask.DurableTaskGrpcWorkerBuilder;
import com.microsoft.durabletask.FailureDetails;
import com.microsoft.durabletask.NewOrchestrationInstanceOptions;
import com.microsoft.durabletask.OrchestrationMetadata;
import com.microsoft.durabletask.OrchestrationRuntimeStatus;
import com.microsoft.durabletask.OrchestrationStatusQuery;
import com.microsoft.durabletask.OrchestrationStatusQueryResult;
import com.microsoft.durabletask.PurgeInstanceCriteria;
import com.microsoft.durabletask.PurgeResult;
import com.microsoft.durabletask.RetryPolicy;
import com.microsoft.durabletask.Task;
import com.microsoft.durabletask.TaskActivity;
import com.microsoft.durabletask.TaskActivityFactory;
import com.microsoft.durabletask.TaskCanceledException;
import com.microsoft.durabletask.TaskFailedException;
import com.microsoft.durabletask.TaskOptions;
import com.microsoft.durabletask.TaskOrchestration;
import com.microsoft.durabletask.TaskOrchestrationContext;
import com.microsoft.durabletask.TaskOrchestrationFactory;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

public final class Scenarios {
    /**
     * How long one scenario may take, waits included, and all of them together: the test runs
     * this program for at most 300 s, and a run that overran would lose its output.
     */
    /**
     * How long the slow activity sleeps, and how many orchestrations wait behind it: 20 s and
     * 50 here, scaled with the test's timeouts; TASKHUB_SLOW_SECONDS and TASKHUB_BEHIND_SLOW
     * set the full size (180 s, 200), run with the endpoint's default timeouts.
     */
    static final Duration SLOW = Duration.ofSeconds(envLong("TASKHUB_SLOW_SECONDS", 20));
    static final int BEHIND_SLOW = (int) envLong("TASKHUB_BEHIND_SLOW", 50);
    static final Duration DEADLINE = Duration.ofSeconds(Math.max(60, SLOW.toSeconds() + 60));
    static final Duration RUN_BUDGET = Duration.ofSeconds(240).plus(SLOW.multipliedBy(3));
    static final Instant END = Instant.now().plus(RUN_BUDGET);

    static long envLong(String name, long fallback) {
        String v = System.getenv(name);
        return v == null || v.isBlank() ? fallback : Long.parseLong(v.trim());
    }

    static final List<String> HELLO = List.of("Hello Tokyo!", "Hello Seattle!", "Hello London!");

    // ---- Activities.

    /** Calls per key, for the activities that fail a number of times or must run once. */
    static final class Counts {
        private final Map<String, Integer> n = new ConcurrentHashMap<>();

        int add(String key) {
            return n.merge(key, 1, Integer::sum);
        }

        int get(String key) {
            return n.getOrDefault(key, 0);
        }
    }

    static final Counts ATTEMPTS = new Counts();
    static final Counts CALLS = new Counts();
    static final Counts RUNS = new Counts();
    /** Counted down when the slow activity has started. */
    static final CountDownLatch SLOW_STARTED = new CountDownLatch(1);

    static final Map<String, TaskActivity> ACTIVITIES = new LinkedHashMap<>();

    static {
        ACTIVITIES.put("Hello", ctx -> "Hello " + ctx.getInput(String.class) + "!");
        ACTIVITIES.put("Double", ctx -> 2 * ctx.getInput(Integer.class));
        ACTIVITIES.put("Boom", ctx -> {
            throw new IllegalStateException("Kah-BOOOOM!!!");
        });
        // Fails twice per key, then answers the attempt number.
        ACTIVITIES.put("Flaky", ctx -> {
            String key = ctx.getInput(String.class);
            int n = ATTEMPTS.add(key);
            if (n < 3) {
                throw new IllegalStateException("attempt " + n + " fails");
            }
            return n;
        });
        // Fails the first call per key, then answers.
        ACTIVITIES.put("FailsOnce", ctx -> {
            String key = ctx.getInput(String.class);
            if (CALLS.add(key) == 1) {
                throw new IllegalStateException("first call for " + key + " fails");
            }
            return "ok: " + key;
        });
        // Counts its runs per key and answers the key.
        ACTIVITIES.put("Count", ctx -> {
            String key = ctx.getInput(String.class);
            RUNS.add(key);
            return key;
        });
        // Sleeps for its input in milliseconds, on the worker's only thread.
        ACTIVITIES.put("Slow", ctx -> {
            RUNS.add("slow");
            SLOW_STARTED.countDown();
            try {
                Thread.sleep(ctx.getInput(Long.class));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            }
            return "slept";
        });
    }

    // ---- Orchestrations.

    static final Map<String, TaskOrchestration> ORCHESTRATIONS = new LinkedHashMap<>();

    static String childId(TaskOrchestrationContext ctx) {
        return ctx.getInstanceId() + ":child";
    }

    static final RetryPolicy POLICY = new RetryPolicy(3, Duration.ofMillis(200));

    static {
        ORCHESTRATIONS.put("Sequence", ctx -> {
            List<String> out = new ArrayList<>();
            for (String city : List.of("Tokyo", "Seattle", "London")) {
                out.add(ctx.callActivity("Hello", city, String.class).await());
            }
            ctx.complete(out);
        });
        ORCHESTRATIONS.put("FanOut", ctx -> {
            int n = ctx.getInput(Integer.class);
            List<Task<Integer>> tasks = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                tasks.add(ctx.callActivity("Double", i, Integer.class));
            }
            ctx.complete(ctx.allOf(tasks).await().stream().mapToInt(Integer::intValue).sum());
        });
        ORCHESTRATIONS.put("Parent", ctx -> {
            Object child = ctx.callSubOrchestrator("Sequence", null, childId(ctx), Object.class).await();
            ctx.complete(Map.of("child", child));
        });
        // Sleeps on a durable timer for its input in seconds, answers the seconds that passed in
        // orchestration time.
        ORCHESTRATIONS.put("Sleeper", ctx -> {
            Instant start = ctx.getCurrentInstant();
            ctx.createTimer(Duration.ofMillis((long) (ctx.getInput(Double.class) * 1000))).await();
            ctx.complete(Duration.between(start, ctx.getCurrentInstant()).toMillis() / 1000.0);
        });
        ORCHESTRATIONS.put("Waiter", ctx -> {
            ctx.setCustomStatus("waiting");
            ctx.complete(ctx.waitForExternalEvent("Go", Object.class).await());
        });
        // Waits only after a timer: an event raised at once arrives before the wait.
        ORCHESTRATIONS.put("LateWaiter", ctx -> {
            ctx.createTimer(Duration.ofSeconds(1)).await();
            ctx.complete(ctx.waitForExternalEvent("Go", Object.class).await());
        });
        ORCHESTRATIONS.put("Failing", ctx -> {
            ctx.callActivity("Boom").await();
            ctx.complete("not failed");
        });
        // Answers what it sees of a failed activity and of a failed sub-orchestration.
        ORCHESTRATIONS.put("CatchFailure", ctx -> {
            Map<String, String> seen = new LinkedHashMap<>();
            try {
                ctx.callActivity("Boom").await();
            } catch (TaskFailedException e) {
                seen.put("activityName", e.getTaskName());
                seen.put("activityType", e.getErrorDetails().getErrorType());
                seen.put("activityMessage", e.getErrorDetails().getErrorMessage());
            }
            try {
                ctx.callSubOrchestrator("Failing", null, childId(ctx), Void.class).await();
            } catch (TaskFailedException e) {
                seen.put("childName", e.getTaskName());
                seen.put("childMessage", e.getErrorDetails().getErrorMessage());
            }
            ctx.complete(seen);
        });
        ORCHESTRATIONS.put("Tree", ctx -> {
            ctx.complete(ctx.callSubOrchestrator("Waiter", null, childId(ctx), Object.class).await());
        });
        // Waits for `Approve` at most its input in seconds.
        ORCHESTRATIONS.put("Approval", ctx -> {
            Duration timeout = Duration.ofMillis((long) (ctx.getInput(Double.class) * 1000));
            try {
                ctx.complete("approved: " + ctx.waitForExternalEvent("Approve", timeout, String.class).await());
            } catch (TaskCanceledException e) {
                ctx.complete("timed out");
            }
        });
        // Races `Approve` against a timer of its input in seconds with anyOf.
        ORCHESTRATIONS.put("Race", ctx -> {
            Task<String> event = ctx.waitForExternalEvent("Approve", String.class);
            Task<Void> timer = ctx.createTimer(Duration.ofMillis((long) (ctx.getInput(Double.class) * 1000)));
            Task<?> winner = ctx.anyOf(event, timer).await();
            ctx.complete(winner == event ? "approved: " + event.await() : "timed out");
        });
        // Adds one `Add` event per execution, continuing as new and keeping the unread events. It
        // continues after a timer, in a turn of its own: 1.5.0 also carries over the event it read
        // when that came in the same turn (see the header).
        ORCHESTRATIONS.put("Adder", ctx -> {
            int total = ctx.getInput(Integer.class) + ctx.waitForExternalEvent("Add", Integer.class).await();
            if (total >= 10) {
                ctx.complete(total);
                return;
            }
            ctx.createTimer(Duration.ofMillis(100)).await();
            ctx.continueAsNew(total, true);
        });
        // Continues as new once, after a timer, without keeping unread events: the next execution
        // waits 2 s for `Extra` and says whether one came.
        ORCHESTRATIONS.put("Forgetful", ctx -> {
            if (ctx.getInput(Integer.class) == 0) {
                ctx.createTimer(Duration.ofSeconds(1)).await();
                ctx.continueAsNew(1, false);
                return;
            }
            try {
                ctx.complete("kept: " + ctx.waitForExternalEvent("Extra", Duration.ofSeconds(2), String.class).await());
            } catch (TaskCanceledException e) {
                ctx.complete("dropped");
            }
        });
        ORCHESTRATIONS.put("Retrying", ctx -> {
            ctx.complete(ctx.callActivity("Flaky", ctx.getInstanceId(), new TaskOptions(POLICY), Integer.class).await());
        });
        // Fails its first execution (its activity fails, without a retry), succeeds the next.
        ORCHESTRATIONS.put("FlakyChild", ctx -> {
            ctx.complete(ctx.callActivity("FailsOnce", ctx.getInput(String.class), String.class).await());
        });
        ORCHESTRATIONS.put("RetryingParent", ctx -> {
            String child = ctx.callSubOrchestrator(
                    "FlakyChild", ctx.getInstanceId(), childId(ctx), new TaskOptions(POLICY), String.class).await();
            ctx.complete(Map.of("child", child));
        });
        ORCHESTRATIONS.put("Statuses", ctx -> {
            ctx.setCustomStatus(Map.of("step", 1));
            ctx.createTimer(Duration.ofMillis(100)).await();
            ctx.setCustomStatus(Map.of("step", 2));
            ctx.complete("done");
        });
        // Answers the orchestration time of its first turn, in Unix milliseconds.
        ORCHESTRATIONS.put("StartTime", ctx -> ctx.complete(ctx.getCurrentInstant().toEpochMilli()));
        // Calls the slow activity for its input in milliseconds.
        ORCHESTRATIONS.put("SlowCaller", ctx -> {
            ctx.complete(ctx.callActivity("Slow", ctx.getInput(Long.class), String.class).await());
        });
        // One activity, counted per instance.
        ORCHESTRATIONS.put("Counted", ctx -> {
            ctx.complete(ctx.callActivity("Count", ctx.getInstanceId(), String.class).await());
        });
    }

    // ---- What the worker logs when it goes wrong.

    /**
     * Notes what the 1.5.0 worker logs (java.util.logging, logger `com.microsoft.durabletask`)
     * when something goes wrong on its stream: a completion or the stream refused ("Unexpected
     * failure connecting to ..."), the stream closed ("has disconnected", "is unavailable"), a work
     * item it does not know ("Received and dropped an unknown ...").
     */
    static final class WorkerLog extends Handler {
        private final List<String> trouble = new ArrayList<>();

        @Override
        public synchronized void publish(LogRecord r) {
            String m = r.getMessage() == null ? "" : r.getMessage();
            if (m.startsWith("Unexpected failure") || m.contains("has disconnected")
                    || m.contains("is unavailable") || m.startsWith("Received and dropped")) {
                // Its messages quote their placeholders ('{0}'), which MessageFormat leaves as they
                // are: the parameters go after them.
                Object[] params = r.getParameters();
                String text = params == null ? m : m + " " + java.util.Arrays.toString(params);
                trouble.add(r.getInstant() + " " + r.getLevel() + " " + text);
            }
        }

        synchronized List<String> trouble() {
            return new ArrayList<>(trouble);
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
    }

    /** The SDK's logger, held so that its handler is not lost with it. */
    static final Logger SDK_LOGGER = Logger.getLogger("com.microsoft.durabletask");

    // ---- Checks.

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    static void equal(String what, Object got, Object want) {
        if (!Objects.equals(got, want)) {
            throw new AssertionError(what + ": got " + got + ", want " + want);
        }
    }

    /** The client side: the SDK's client and the starts made ahead of the scenarios. */
    static final class Hub {
        final DurableTaskClient c;
        final Map<String, RuntimeException> startFailures = new ConcurrentHashMap<>();

        Hub(DurableTaskClient c) {
            this.c = c;
        }

        /** Starts orchestration `name` as `id`, noting a failure for the scenario reading it. */
        void start(String name, String id, Object input) {
            start(name, new NewOrchestrationInstanceOptions().setInstanceId(id).setInput(input));
        }

        void start(String name, NewOrchestrationInstanceOptions options) {
            try {
                String got = c.scheduleNewOrchestrationInstance(name, options);
                equal("the ID the start answered", got, options.getInstanceId());
            } catch (RuntimeException e) {
                startFailures.put(options.getInstanceId(), e);
            }
        }

        /** Waits for `id` to end. */
        OrchestrationMetadata finish(String id) throws TimeoutException {
            RuntimeException failed = startFailures.get(id);
            if (failed != null) {
                throw new AssertionError("starting " + id + ": " + failed, failed);
            }
            OrchestrationMetadata md = c.waitForInstanceCompletion(id, DEADLINE, true);
            check(md != null && md.isInstanceFound(), id + " does not exist");
            return md;
        }

        /** Waits for `id` to complete and reads its output as `type`. */
        <T> T output(String id, Class<T> type) throws TimeoutException {
            OrchestrationMetadata md = finish(id);
            if (md.getRuntimeStatus() != OrchestrationRuntimeStatus.COMPLETED) {
                FailureDetails f = md.getFailureDetails();
                throw new AssertionError(id + " ended " + md.getRuntimeStatus() + ", not COMPLETED (output "
                        + md.getSerializedOutput() + ", failure " + f.getErrorType() + ": " + f.getErrorMessage() + ")");
            }
            return md.readOutputAs(type);
        }

        /** Waits for `id` to complete with the output `want` (read back as want's class). */
        void outputIs(String id, Object want) throws TimeoutException {
            Class<?> type = want instanceof List ? List.class : want instanceof Map ? Map.class : want.getClass();
            equal("the output of " + id, output(id, type), want);
        }

        /** Waits for `id` to end with status `want`. */
        OrchestrationMetadata endsAs(String id, OrchestrationRuntimeStatus want) throws TimeoutException {
            OrchestrationMetadata md = finish(id);
            equal("the status of " + id, md.getRuntimeStatus(), want);
            return md;
        }

        OrchestrationMetadata get(String id) {
            return c.getInstanceMetadata(id, true);
        }

        OrchestrationRuntimeStatus status(String id) {
            OrchestrationMetadata md = get(id);
            check(md.isInstanceFound(), id + " does not exist");
            return md.getRuntimeStatus();
        }

        /** Waits until `id` has status `want`. */
        void becomes(String id, OrchestrationRuntimeStatus want) throws InterruptedException {
            Object last = null;
            for (;;) {
                OrchestrationMetadata md = get(id);
                last = md.isInstanceFound() ? md.getRuntimeStatus() : "missing";
                if (last == want) {
                    return;
                }
                if (Thread.interrupted()) {
                    throw new InterruptedException(id + " never became " + want + " (last " + last + ")");
                }
                Thread.sleep(50);
            }
        }

        /** Waits until `id` shows the custom status "waiting" (the Waiter is at its wait). */
        void waiting(String id) throws InterruptedException {
            for (;;) {
                OrchestrationMetadata md = get(id);
                if (md.isInstanceFound() && "waiting".equals(md.readCustomStatusAs(String.class))) {
                    return;
                }
                if (Thread.interrupted()) {
                    throw new InterruptedException(id + " never waited");
                }
                Thread.sleep(50);
            }
        }

        /** Asserts that `id` does not exist. */
        void gone(String id) {
            OrchestrationMetadata md = get(id);
            check(!md.isInstanceFound(), id + " should not exist: " + md);
        }
    }

    // ---- Scenarios.

    interface Body {
        void run() throws Exception;
    }

    static final List<String> DONE = new CopyOnWriteArrayList<>();
    static final List<String> FAILED = new CopyOnWriteArrayList<>();
    static final ExecutorService RUNNER = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "scenario");
        t.setDaemon(true);
        return t;
    });

    static void scenario(String name, Body body) {
        scenario(name, DEADLINE, body);
    }

    /** Runs `body` within `deadline`, or what is left of the run's budget, noting the outcome. */
    static void scenario(String name, Duration deadline, Body body) {
        Duration left = Duration.between(Instant.now(), END);
        if (left.isNegative() || left.isZero()) {
            FAILED.add(name + ": not run, the run's budget is spent");
            System.out.println("FAILED: " + name + ": not run, the run's budget (" + RUN_BUDGET.toSeconds()
                    + " s) is spent");
            return;
        }
        run(name, left.compareTo(deadline) < 0 ? left : deadline, body);
    }

    /** Runs a check that does not wait, whatever is left of the run's budget. */
    static void last(String name, Body body) {
        run(name, Duration.ofSeconds(10), body);
    }

    static void run(String name, Duration deadline, Body body) {
        Future<?> f = RUNNER.submit(() -> {
            body.run();
            return null;
        });
        String error = null;
        try {
            f.get(deadline.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            f.cancel(true);
            error = "did not finish within " + deadline.toMillis() / 1000.0 + " s";
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            error = cause instanceof AssertionError ? cause.getMessage() : String.valueOf(cause);
        } catch (InterruptedException e) {
            error = "interrupted";
        }
        if (error == null) {
            DONE.add(name);
            System.out.println("ok: " + name);
        } else {
            FAILED.add(name + ": " + error);
            System.out.println("FAILED: " + name + ": " + error);
        }
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1 || !args[0].contains(":")) {
            System.err.println("usage: java Scenarios HOST:PORT (HOST a loopback address)");
            System.exit(2);
        }
        String host = args[0].substring(0, args[0].lastIndexOf(':'));
        int port = Integer.parseInt(args[0].substring(args[0].lastIndexOf(':') + 1));
        if (!java.net.InetAddress.getByName(host).isLoopbackAddress()) {
            System.err.println("the Java SDK 1.5.0 connects to localhost only; " + host + " is not a loopback address");
            System.exit(2);
        }
        WorkerLog log = new WorkerLog();
        SDK_LOGGER.addHandler(log);
        // Whatever blocks (a call outside the scenarios, the worker's shutdown), the run ends in
        // time to be read.
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(Duration.between(Instant.now(), END.plusSeconds(30)).toMillis());
            } catch (InterruptedException e) {
                return;
            }
            System.out.println("FAILED: the run overran its budget of " + RUN_BUDGET.toSeconds()
                    + " s; failed so far:\n" + String.join("\n", FAILED));
            System.out.flush();
            Runtime.getRuntime().halt(1);
        }, "watchdog");
        watchdog.setDaemon(true);
        watchdog.start();

        DurableTaskGrpcWorkerBuilder builder = new DurableTaskGrpcWorkerBuilder().port(port);
        for (Map.Entry<String, TaskOrchestration> e : ORCHESTRATIONS.entrySet()) {
            builder.addOrchestration(new TaskOrchestrationFactory() {
                @Override
                public String getName() {
                    return e.getKey();
                }

                @Override
                public TaskOrchestration create() {
                    return e.getValue();
                }
            });
        }
        for (Map.Entry<String, TaskActivity> e : ACTIVITIES.entrySet()) {
            builder.addActivity(new TaskActivityFactory() {
                @Override
                public String getName() {
                    return e.getKey();
                }

                @Override
                public TaskActivity create() {
                    return e.getValue();
                }
            });
        }
        DurableTaskGrpcWorker worker = builder.build();
        worker.start();
        DurableTaskClient client = new DurableTaskGrpcClientBuilder().port(port).build();
        int code;
        try {
            scenarios(new Hub(client), log);
            code = FAILED.isEmpty() ? 0 : 1;
        } finally {
            worker.stop();
            client.close();
        }
        if (code != 0) {
            System.out.println("FAILED scenarios:\n" + String.join("\n", FAILED));
        } else {
            System.out.println("all " + DONE.size() + " Java SDK worker checks passed");
        }
        System.out.flush();
        System.exit(code);
    }

    static void scenarios(Hub h, WorkerLog log) throws Exception {
        DurableTaskClient c = h.c;
        Instant began = Instant.now();
        h.start("Sequence", "java-seq", null);
        h.start("FanOut", "java-fan", 50);
        h.start("Parent", "java-par", null);
        h.start("Sleeper", "java-sleep", 1.0);
        h.start("Failing", "java-fail", null);
        h.start("CatchFailure", "java-catch", null);
        h.start("LateWaiter", "java-early-event", null);
        if (!h.startFailures.containsKey("java-early-event")) {
            c.raiseEvent("java-early-event", "Go", "early");
        }
        h.start("Approval", "java-approve-yes", 30.0);
        h.start("Approval", "java-approve-no", 1.0);
        h.start("Race", "java-race-yes", 30.0);
        h.start("Race", "java-race-no", 1.0);
        h.start("Retrying", "java-retry", null);
        h.start("RetryingParent", "java-sub-retry", null);
        h.start("Statuses", "java-status", null);

        scenario("activity sequence", () -> h.outputIs("java-seq", HELLO));
        scenario("fan-out/fan-in (50 activities)", () -> h.outputIs("java-fan", 2 * (49 * 50 / 2)));
        scenario("sub-orchestration", () -> {
            h.outputIs("java-par", Map.of("child", HELLO));
            h.outputIs("java-par:child", HELLO);
        });
        scenario("durable timer", () -> {
            double seconds = h.output("java-sleep", Double.class);
            check(seconds >= 1, "the timer of 1 s fired after " + seconds + " s");
        });
        scenario("external event raised before the wait", () -> h.outputIs("java-early-event", "early"));
        scenario("external event raised after the wait", () -> {
            h.start("Waiter", "java-wait", null);
            OrchestrationMetadata md = c.waitForInstanceStart("java-wait", DEADLINE);
            equal("the status of java-wait once started", md.getRuntimeStatus(), OrchestrationRuntimeStatus.RUNNING);
            h.waiting("java-wait");
            c.raiseEvent("java-wait", "Go", Map.of("approved", true));
            h.outputIs("java-wait", Map.of("approved", true));
        });
        scenario("wait for an event with a timeout (event first, timeout first)", () -> {
            c.raiseEvent("java-approve-yes", "Approve", "ok");
            h.outputIs("java-approve-yes", "approved: ok");
            h.outputIs("java-approve-no", "timed out");
        });
        scenario("anyOf with a timer (event first, timer first)", () -> {
            c.raiseEvent("java-race-yes", "Approve", "ok");
            h.outputIs("java-race-yes", "approved: ok");
            h.outputIs("java-race-no", "timed out");
        });
        scenario("continue-as-new keeping unread events", () -> {
            h.start("Adder", "java-adder", 0);
            for (int v : new int[] {1, 2, 3, 4}) {
                c.raiseEvent("java-adder", "Add", v);
            }
            h.outputIs("java-adder", 10);
        });
        scenario("continue-as-new without keeping unread events", () -> {
            h.start("Forgetful", "java-forget", 0);
            c.raiseEvent("java-forget", "Extra", "x");
            h.outputIs("java-forget", "dropped");
        });
        scenario("activity retries with a policy (two failures, then success)", () -> {
            h.outputIs("java-retry", 3);
            equal("attempts", ATTEMPTS.get("java-retry"), 3);
        });
        scenario("sub-orchestration retries with a policy (fails once, then succeeds)", () -> {
            h.outputIs("java-sub-retry", Map.of("child", "ok: java-sub-retry"));
            h.outputIs("java-sub-retry:child", "ok: java-sub-retry");
            equal("calls of the child's activity", CALLS.get("java-sub-retry"), 2);
        });
        scenario("failure with its details", () -> {
            FailureDetails f = h.endsAs("java-fail", OrchestrationRuntimeStatus.FAILED).getFailureDetails();
            check(f.getErrorMessage().contains("Kah-BOOOOM!!!"), "the failure's message: " + f.getErrorMessage());
            equal("the failure's type", f.getErrorType(), TaskFailedException.class.getName());
            check(f.getStackTrace() != null && f.getStackTrace().contains("Scenarios"),
                    "the failure's stack trace: " + f.getStackTrace());
            // As the orchestrations see it: the activity's exception and a failed child.
            @SuppressWarnings("unchecked")
            Map<String, String> seen = h.output("java-catch", Map.class);
            equal("the failed activity's name", seen.get("activityName"), "Boom");
            equal("the failed activity's error type", seen.get("activityType"), IllegalStateException.class.getName());
            equal("the failed activity's message", seen.get("activityMessage"), "Kah-BOOOOM!!!");
            equal("the failed child's name", seen.get("childName"), "Failing");
            String childMessage = String.valueOf(seen.get("childMessage"));
            check(childMessage.contains("Kah-BOOOOM!!!"), "the failed child's message: " + childMessage);
            h.endsAs("java-catch:child", OrchestrationRuntimeStatus.FAILED);
        });
        scenario("custom status", () -> {
            h.outputIs("java-status", "done");
            equal("the custom status", h.get("java-status").readCustomStatusAs(Map.class), Map.of("step", 2));
        });
        scenario("suspend and resume (with reasons)", () -> {
            h.start("Waiter", "java-susp", null);
            h.waiting("java-susp");
            c.suspendInstance("java-susp", "maintenance");
            h.becomes("java-susp", OrchestrationRuntimeStatus.SUSPENDED);
            c.raiseEvent("java-susp", "Go", 7);
            Thread.sleep(500);
            equal("the status of java-susp 500 ms after an event", h.status("java-susp"),
                    OrchestrationRuntimeStatus.SUSPENDED);
            c.resumeInstance("java-susp", "done");
            h.outputIs("java-susp", 7);
        });
        scenario("terminate (not recursive: the child keeps running)", () -> {
            h.start("Tree", "java-term", null);
            h.waiting("java-term:child");
            c.terminate("java-term", "stop");
            OrchestrationMetadata md = h.endsAs("java-term", OrchestrationRuntimeStatus.TERMINATED);
            equal("the output of java-term", md.readOutputAs(String.class), "stop");
            equal("the status of the child of a parent terminated alone", h.status("java-term:child"),
                    OrchestrationRuntimeStatus.RUNNING);
            c.raiseEvent("java-term:child", "Go", "alone");
            h.outputIs("java-term:child", "alone");
            equal("the parent's status after its child ended", h.status("java-term"),
                    OrchestrationRuntimeStatus.TERMINATED);
        });
        scenario("instance metadata (payloads or not, a missing instance, a generated ID)", () -> {
            OrchestrationMetadata md = h.get("java-fan");
            equal("the instance ID", md.getInstanceId(), "java-fan");
            equal("the name", md.getName(), "FanOut");
            equal("the status", md.getRuntimeStatus(), OrchestrationRuntimeStatus.COMPLETED);
            equal("the input", md.getSerializedInput(), "50");
            equal("the output", md.getSerializedOutput(), "2450");
            check(md.getCreatedAt().isAfter(began.minusSeconds(60)) && !md.getLastUpdatedAt().isBefore(md.getCreatedAt()),
                    "created " + md.getCreatedAt() + ", last updated " + md.getLastUpdatedAt());
            OrchestrationMetadata bare = c.getInstanceMetadata("java-fan", false);
            equal("the status without payloads", bare.getRuntimeStatus(), OrchestrationRuntimeStatus.COMPLETED);
            equal("the input without payloads", bare.getSerializedInput(), "");
            equal("the output without payloads", bare.getSerializedOutput(), "");
            h.gone("java-no-such-instance");
            String id = c.scheduleNewOrchestrationInstance("Sequence");
            check(id != null && !id.isEmpty(), "a generated ID: " + id);
            h.outputIs(id, HELLO);
        });
        scenario("query with paging", () -> {
            for (int i = 0; i < 5; i++) {
                h.start("Sequence", "java-q-" + i, null);
            }
            for (int i = 0; i < 5; i++) {
                h.outputIs("java-q-" + i, HELLO);
            }
            OrchestrationStatusQuery query = new OrchestrationStatusQuery()
                    .setInstanceIdPrefix("java-q-")
                    .setMaxInstanceCount(2)
                    .setFetchInputsAndOutputs(true)
                    .setRuntimeStatusList(List.of(OrchestrationRuntimeStatus.COMPLETED));
            List<String> ids = new ArrayList<>();
            List<Integer> sizes = new ArrayList<>();
            for (int pages = 1;; pages++) {
                check(pages < 100, "paging never ends: " + sizes);
                OrchestrationStatusQueryResult page = c.queryInstances(query);
                sizes.add(page.getOrchestrationState().size());
                check(page.getOrchestrationState().size() <= 2, "pages of 2: " + sizes);
                for (OrchestrationMetadata md : page.getOrchestrationState()) {
                    ids.add(md.getInstanceId());
                    equal("the output of " + md.getInstanceId() + " in a page", md.readOutputAs(List.class), HELLO);
                }
                String token = page.getContinuationToken();
                if (token == null || token.isEmpty()) {
                    break;
                }
                query.setContinuationToken(token);
            }
            check(sizes.size() >= 3, "pages of 2: " + sizes);
            equal("the IDs paged through", new HashSet<>(ids),
                    Set.of("java-q-0", "java-q-1", "java-q-2", "java-q-3", "java-q-4"));
            equal("the number of IDs paged through (none twice)", ids.size(), 5);
        });
        scenario("scheduled start time", () -> {
            Instant startAt = Instant.now().plusMillis(1500);
            h.start("StartTime", new NewOrchestrationInstanceOptions().setInstanceId("java-later").setStartTime(startAt));
            equal("the status before the start time", h.status("java-later"), OrchestrationRuntimeStatus.PENDING);
            long firstTurn = h.output("java-later", Long.class);
            check(firstTurn >= startAt.toEpochMilli() - 50,
                    "the first turn ran at " + firstTurn + ", before the start time " + startAt.toEpochMilli());
        });
        scenario("restart with a new ID", () -> {
            h.outputIs("java-seq", HELLO);
            String id = c.restartInstance("java-seq", true);
            check(!"java-seq".equals(id), "a restart with a new ID answered the old one");
            h.outputIs(id, HELLO);
        });
        // 1.5.0 restarts by starting the finished instance again under its ID, with no reuse
        // policy, as its own suite does against the Durable Task sidecar.
        scenario("restart under the same ID (a start over a COMPLETED instance, no reuse policy)", () -> {
            Instant before = h.get("java-seq").getCreatedAt();
            equal("the restarted ID", c.restartInstance("java-seq", false), "java-seq");
            h.outputIs("java-seq", HELLO);
            check(h.get("java-seq").getCreatedAt().isAfter(before), "java-seq was not started again");
        });
        scenario("purge (one; and by status)", () -> {
            h.outputIs("java-par", Map.of("child", HELLO));
            PurgeResult one = c.purgeInstance("java-par");
            equal("instances purged by ID", one.getDeletedInstanceCount(), 1);
            h.gone("java-par");
            equal("the child of a purged parent (not recursive)", h.status("java-par:child"),
                    OrchestrationRuntimeStatus.COMPLETED);
            equal("purging a purged instance", c.purgeInstance("java-par").getDeletedInstanceCount(), 0);
            PurgeInstanceCriteria criteria = new PurgeInstanceCriteria()
                    .setCreatedTimeFrom(began.minusSeconds(60))
                    .setRuntimeStatusList(List.of(OrchestrationRuntimeStatus.FAILED));
            PurgeResult some = c.purgeInstances(criteria);
            // java-fail and java-catch:child failed; a retried child's failed attempt was replaced.
            check(some.getDeletedInstanceCount() >= 2, "purged by status: " + some.getDeletedInstanceCount());
            h.gone("java-fail");
            h.gone("java-catch:child");
            equal("a completed instance after a purge of FAILED ones", h.status("java-catch"),
                    OrchestrationRuntimeStatus.COMPLETED);
        });
        scenario("a " + SLOW.toSeconds() + " s activity on the worker's only thread while " + BEHIND_SLOW
                + " orchestrations wait: none lost, none run twice",
                SLOW.multipliedBy(3).plusSeconds(90), () -> {
            h.start("SlowCaller", "java-slow", SLOW.toMillis());
            check(SLOW_STARTED.await(DEADLINE.toSeconds(), TimeUnit.SECONDS), "the slow activity never started");
            List<String> ids = new ArrayList<>();
            for (int i = 0; i < BEHIND_SLOW; i++) {
                ids.add("java-behind-" + i);
                h.start("Counted", ids.get(i), null);
            }
            h.outputIs("java-slow", "slept");
            for (String id : ids) {
                h.outputIs(id, id);
            }
            equal("runs of the slow activity", RUNS.get("slow"), 1);
            List<String> twice = new ArrayList<>();
            for (String id : ids) {
                if (RUNS.get(id) != 1) {
                    twice.add(id + " ran " + RUNS.get(id) + " times");
                }
            }
            check(twice.isEmpty(), "activities not run exactly once: " + twice);
        });
        last("every completion taken, no reconnect, no work item the Java SDK does not know", () -> {
            List<String> trouble = log.trouble();
            check(trouble.isEmpty(), trouble.size() + " times the worker's stream went wrong, the first: "
                    + (trouble.isEmpty() ? "" : trouble.get(0)));
        });
    }
}
