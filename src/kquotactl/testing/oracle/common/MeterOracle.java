import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.yammer.metrics.core.Clock;
import com.yammer.metrics.core.Meter;

import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Yammer metrics-core 2.2.0's {@code Meter} (Kafka's broker meters, e.g. BytesInPerSec), driven on a replayed clock.
 *
 * <p>{"events": [[t_us, n], ...]} (t ascending): the Meter is built as {@code MetricsRegistry.newMeter} builds it
 * (its package-private constructor, rate unit SECONDS) at the first event's time, on an executor that keeps the tick
 * task the Meter schedules instead of running it; before each event the driver runs that task once for every
 * scheduled time at or before t, from the initial delay and period the Meter itself asked for; then it reads
 * {@code oneMinuteRate()} and calls {@code mark(n)}. Answer: {"rates": [bits, ...]} (each rate read as
 * {@code Double.doubleToRawLongBits}), "schedule": [initialDelay, period] in microseconds, "alpha": the bits of
 * {@code EWMA.M1_ALPHA}.
 */
public final class MeterOracle {
    /** An executor that records the fixed-rate task the Meter schedules and never runs it by itself. */
    static final class Captured extends ScheduledThreadPoolExecutor {
        Runnable task;
        long initialDelayUs;
        long periodUs;

        Captured() {
            super(1);
        }

        @Override
        public ScheduledFuture<?> scheduleAtFixedRate(Runnable command, long initialDelay, long period, TimeUnit unit) {
            task = command;
            initialDelayUs = unit.toMicros(initialDelay);
            periodUs = unit.toMicros(period);
            return null;
        }
    }

    public static void main(String[] args) throws Exception {
        Constructor<Meter> make = Meter.class.getDeclaredConstructor(
                java.util.concurrent.ScheduledExecutorService.class, String.class, TimeUnit.class, Clock.class);
        make.setAccessible(true);
        Field alphaField = Class.forName("com.yammer.metrics.stats.EWMA").getDeclaredField("M1_ALPHA");
        alphaField.setAccessible(true);
        long alpha = Double.doubleToRawLongBits(alphaField.getDouble(null));
        OracleLoop.run((req, json) -> {
            Captured exec = new Captured();
            ObjectNode out = json.createObjectNode();
            ArrayNode rates = out.putArray("rates");
            try {
                Meter meter = null;
                long next = 0;
                for (JsonNode e : req.get("events")) {
                    long t = e.get(0).asLong();
                    if (meter == null) {
                        meter = make.newInstance(exec, "bytes", TimeUnit.SECONDS, Clock.defaultClock());
                        next = t + exec.initialDelayUs;
                    }
                    while (next <= t) {
                        exec.task.run();
                        next += exec.periodUs;
                    }
                    rates.add(Double.doubleToRawLongBits(meter.oneMinuteRate()));
                    meter.mark(e.get(1).asLong());
                }
            } finally {
                exec.shutdownNow();
            }
            out.putArray("schedule").add(exec.initialDelayUs).add(exec.periodUs);
            out.put("alpha", alpha);
            return out;
        });
    }
}
