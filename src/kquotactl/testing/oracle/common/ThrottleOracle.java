import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import kafka.server.AbstractControllerMutationQuota;
import kafka.server.PermissiveControllerMutationQuota;
import kafka.server.StrictControllerMutationQuota;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.errors.ThrottlingQuotaExceededException;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricConfig;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.Quota;
import org.apache.kafka.common.metrics.QuotaViolationException;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.common.metrics.stats.Rate;
import org.apache.kafka.common.metrics.stats.TokenBucket;
import org.apache.kafka.common.utils.Time;

import java.lang.reflect.Method;
import java.util.Collections;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * Kafka's quota sensors, set up as the brokers set them up, driven by a settable clock through one event sequence
 * per request.
 *
 * <p>{"kind": "rate", "samples": N, "window_s": S, "limit": Q, "cap": bool, "unrecord": bool, "base": ms,
 * "events": [[t, v], ...]}: a {@code Sensor} with a {@code Rate} and a {@code MetricConfig} of
 * timeWindow(S s).samples(N).quota(new Quota(Q, true)) ({@code ClientQuotaManager.getQuotaMetricConfig},
 * {@code ConnectionQuotas.rateQuotaMetricConfig}); each event is {@code sensor.record(v, t, true)}; a
 * {@code QuotaViolationException} becomes the throttle through Kafka's own {@code QuotaUtils.throttleTime}
 * ({@code boundedThrottleTime(e, S*1000, t)} with "cap", as {@code ClientRequestQuotaManager} and
 * {@code ConnectionQuotas} do), narrowed to int as the managers do ({@code .toInt}); with "unrecord", a recording
 * whose throttle is &gt; 0 is taken back ({@code record(-v, t, false)}, as {@code KafkaApis} fetch and
 * {@code ConnectionQuotas} do). Answer: {"steps": [[rate, window_ms, throttle_ms], ...]}, rate as
 * {@code Double.toString}.
 *
 * <p>{"kind": "mutation", ..., "mode": "strict"|"permissive"}: the {@code ControllerMutationQuotaManager} sensor (a
 * {@code Rate} and a {@code TokenBucket} with the quota config); each event is one request's
 * {@code StrictControllerMutationQuota} / {@code PermissiveControllerMutationQuota} {@code record(v)} at t, then its
 * {@code throttleTime()}. Answer: {"steps": [[tokens, throttle_ms, rejected], ...]}.
 */
public final class ThrottleOracle {
    /** A clock the driver sets; MockTime lives in kafka-clients' test jar. */
    static final class Clock implements Time {
        long now;

        public long milliseconds() { return now; }

        public long nanoseconds() { return now * 1_000_000L; }

        public long hiResClockMs() { return now; }

        public void sleep(long ms) { now += ms; }

        public void waitObject(Object obj, Supplier<Boolean> condition, long deadlineMs) {
            throw new UnsupportedOperationException("waitObject");
        }
    }

    private static Method throttleTime;
    private static Method boundedThrottleTime;
    private static Object quotaUtils;

    /** kafka.utils.QuotaUtils (Scala object, 2.8 - 3.9) or org.apache.kafka.server.quota.QuotaUtils (4.x). */
    private static void findQuotaUtils() throws Exception {
        Class<?> c;
        try {
            c = Class.forName("org.apache.kafka.server.quota.QuotaUtils");
            quotaUtils = null;
        } catch (ClassNotFoundException e) {
            c = Class.forName("kafka.utils.QuotaUtils$");
            quotaUtils = c.getField("MODULE$").get(null);
        }
        throttleTime = c.getMethod("throttleTime", QuotaViolationException.class, long.class);
        boundedThrottleTime = c.getMethod("boundedThrottleTime", QuotaViolationException.class, long.class, long.class);
    }

    private static MetricConfig quotaConfig(JsonNode req) {
        return new MetricConfig()
            .timeWindow(req.get("window_s").asLong(), TimeUnit.SECONDS)
            .samples(req.get("samples").asInt())
            .quota(new Quota(req.get("limit").asDouble(), true));
    }

    private static JsonNode rate(JsonNode req, com.fasterxml.jackson.databind.ObjectMapper json) throws Exception {
        Clock clock = new Clock();
        long base = req.get("base").asLong();
        boolean cap = req.get("cap").asBoolean();
        boolean unrecord = req.get("unrecord").asBoolean();
        long capMs = TimeUnit.SECONDS.toMillis(req.get("window_s").asLong());
        ArrayNode steps = json.createArrayNode();
        try (Metrics metrics = new Metrics(new MetricConfig(), Collections.emptyList(), clock)) {
            Sensor sensor = metrics.sensor("Produce-:client");
            MetricName name = metrics.metricName("byte-rate", "Produce");
            MetricConfig config = quotaConfig(req);
            sensor.add(name, new Rate(), config);
            KafkaMetric metric = metrics.metric(name);
            Rate rate = (Rate) metric.measurable();
            for (JsonNode ev : req.get("events")) {
                long now = base + ev.get(0).asLong();
                double value = ev.get(1).asDouble();
                clock.now = now;
                int throttle = 0;
                Double violated = null;
                try {
                    sensor.record(value, now, true);
                } catch (QuotaViolationException e) {
                    violated = e.value();
                    long ms = cap
                        ? (Long) boundedThrottleTime.invoke(quotaUtils, e, capMs, now)
                        : (Long) throttleTime.invoke(quotaUtils, e, now);
                    throttle = (int) ms;
                }
                double measured = violated != null ? violated : rate.measure(metric.config(), now);
                long window = rate.windowSize(metric.config(), now);
                if (unrecord && throttle > 0) {
                    sensor.record(-value, now, false);
                }
                ArrayNode step = json.createArrayNode();
                step.add(Double.toString(measured));
                step.add(window);
                step.add(throttle);
                steps.add(step);
            }
        }
        ObjectNode out = json.createObjectNode();
        out.set("steps", steps);
        return out;
    }

    private static JsonNode mutation(JsonNode req, com.fasterxml.jackson.databind.ObjectMapper json) throws Exception {
        Clock clock = new Clock();
        long base = req.get("base").asLong();
        boolean strict = "strict".equals(req.get("mode").asText());
        ArrayNode steps = json.createArrayNode();
        try (Metrics metrics = new Metrics(new MetricConfig(), Collections.emptyList(), clock)) {
            Sensor sensor = metrics.sensor("ControllerMutation-:client");
            sensor.add(metrics.metricName("mutation-rate", "ControllerMutation"), new Rate());
            MetricName tokensName = metrics.metricName("tokens", "ControllerMutation");
            sensor.add(tokensName, new TokenBucket(), quotaConfig(req));
            KafkaMetric tokens = metrics.metric(tokensName);
            for (JsonNode ev : req.get("events")) {
                clock.now = base + ev.get(0).asLong();
                double value = ev.get(1).asDouble();
                AbstractControllerMutationQuota quota = strict
                    ? new StrictControllerMutationQuota(clock, sensor)
                    : new PermissiveControllerMutationQuota(clock, sensor);
                boolean rejected = false;
                try {
                    quota.record(value);
                } catch (ThrottlingQuotaExceededException e) {
                    rejected = true;
                }
                ArrayNode step = json.createArrayNode();
                step.add(Double.toString(((TokenBucket) tokens.measurable()).measure(tokens.config(), clock.now)));
                step.add(quota.throttleTime());
                step.add(rejected);
                steps.add(step);
            }
        }
        ObjectNode out = json.createObjectNode();
        out.set("steps", steps);
        return out;
    }

    public static void main(String[] args) throws Exception {
        findQuotaUtils();
        OracleLoop.run((req, json) -> {
            switch (req.get("kind").asText()) {
                case "rate": return rate(req, json);
                case "mutation": return mutation(req, json);
                default: throw new IllegalArgumentException("unknown kind " + req.get("kind"));
            }
        });
    }
}
