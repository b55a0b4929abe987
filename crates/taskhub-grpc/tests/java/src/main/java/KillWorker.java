// One Durable Task Java SDK worker (com.microsoft:durabletask-client 1.5.0, pinned in pom.xml),
// for the SIGKILL test of tests/sdk_kill.rs: `java KillWorker HOST:PORT NAME SLOW_SECONDS` (the
// classpath in CLASSPATH; HOST a loopback address: 1.5.0 always connects to localhost) runs the
// SDK's DurableTaskGrpcWorker until killed and prints "worker NAME started" once it is started.
// Its orchestration `TwoSteps` runs the activity `Step`, then `SlowStep`, which prints "slow
// step started by NAME" and sleeps SLOW_SECONDS; each activity answers which worker ran it
// ("WHAT by NAME"). Its orchestration `RewindMe` (for tests/sdk_rewind.rs) runs `Charge`,
// then `FailsOnce`, which fails its first run; both print "ACTIVITY ran by NAME" ("charge",
// "fails once") each time they run.

import com.microsoft.durabletask.DurableTaskGrpcWorker;
import com.microsoft.durabletask.DurableTaskGrpcWorkerBuilder;
import com.microsoft.durabletask.TaskActivity;
import com.microsoft.durabletask.TaskActivityFactory;
import com.microsoft.durabletask.TaskOrchestration;
import com.microsoft.durabletask.TaskOrchestrationFactory;

import java.util.List;

public final class KillWorker {
    private KillWorker() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3 || !args[0].contains(":")) {
            System.err.println("usage: java KillWorker HOST:PORT NAME SLOW_SECONDS");
            System.exit(2);
        }
        int port = Integer.parseInt(args[0].substring(args[0].lastIndexOf(':') + 1));
        String name = args[1];
        long slowMillis = Long.parseLong(args[2]) * 1000;

        TaskOrchestration twoSteps = ctx -> {
            String first = ctx.callActivity("Step", "step 1", String.class).await();
            String second = ctx.callActivity("SlowStep", "slow step", String.class).await();
            ctx.complete(List.of(first, second));
        };
        TaskActivity step = ctx -> ctx.getInput(String.class) + " by " + name;
        TaskActivity slowStep = ctx -> {
            System.out.println("slow step started by " + name);
            System.out.flush();
            try {
                Thread.sleep(slowMillis);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            }
            return ctx.getInput(String.class) + " by " + name;
        };

        // For tests/sdk_rewind.rs: `RewindMe` runs `Charge`, then `FailsOnce`, which fails its
        // first run in this process; each prints that it ran, so the test counts the runs.
        TaskOrchestration rewindMe = ctx -> {
            String charged = ctx.callActivity("Charge", "charge", String.class).await();
            String shipped = ctx.callActivity("FailsOnce", "ship", String.class).await();
            ctx.complete(List.of(charged, shipped));
        };
        TaskActivity charge = ctx -> {
            System.out.println("charge ran by " + name);
            System.out.flush();
            return ctx.getInput(String.class) + " by " + name;
        };
        java.util.concurrent.atomic.AtomicBoolean failed = new java.util.concurrent.atomic.AtomicBoolean();
        TaskActivity failsOnce = ctx -> {
            System.out.println("fails once ran by " + name);
            System.out.flush();
            if (!failed.getAndSet(true)) {
                throw new IllegalStateException("the carrier is down");
            }
            return ctx.getInput(String.class) + " by " + name;
        };

        DurableTaskGrpcWorker worker = new DurableTaskGrpcWorkerBuilder()
                .port(port)
                .addOrchestration(orchestration("TwoSteps", twoSteps))
                .addActivity(activity("Step", step))
                .addActivity(activity("SlowStep", slowStep))
                .addOrchestration(orchestration("RewindMe", rewindMe))
                .addActivity(activity("Charge", charge))
                .addActivity(activity("FailsOnce", failsOnce))
                .build();
        worker.start();
        System.out.println("worker " + name + " started");
        System.out.flush();
        Thread.currentThread().join();
    }

    static TaskOrchestrationFactory orchestration(String name, TaskOrchestration o) {
        return new TaskOrchestrationFactory() {
            @Override
            public String getName() {
                return name;
            }

            @Override
            public TaskOrchestration create() {
                return o;
            }
        };
    }

    static TaskActivityFactory activity(String name, TaskActivity a) {
        return new TaskActivityFactory() {
            @Override
            public String getName() {
                return name;
            }

            @Override
            public TaskActivity create() {
                return a;
            }
        };
    }
}
