import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.utils.Exit;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Kafka's own ConfigCommand (kafka-configs.sh), run in-process many times in one JVM: Scala
 * {@code kafka.admin.ConfigCommand} up to 4.1, Java {@code org.apache.kafka.tools.ConfigCommand} (kafka-tools) from 4.2.
 *
 * Request: {"args": ["--zookeeper", "...", "--describe", ...]} -> {"exit": code, "out": stdout, "err": stderr}.
 * {@code Exit.exit} is turned into an exception, so an error ends one command, not the JVM.
 */
public final class ConfigCommandOracle {
    private static final class ExitCalled extends RuntimeException {
        final int code;

        ExitCalled(int code) {
            super("exit " + code);
            this.code = code;
        }
    }

    public static void main(String[] argv) throws Exception {
        Method main;
        try {
            main = Class.forName("org.apache.kafka.tools.ConfigCommand").getMethod("main", String[].class);
        } catch (ClassNotFoundException e) {
            main = Class.forName("kafka.admin.ConfigCommand").getMethod("main", String[].class);
        }
        Method configCommand = main;
        Exit.setExitProcedure((code, message) -> {
            throw new ExitCalled(code);
        });
        Exit.setHaltProcedure((code, message) -> {
            throw new ExitCalled(code);
        });
        PrintStream realOut = System.out;
        PrintStream realErr = System.err;
        OracleLoop.run((req, json) -> {
            List<String> args = new ArrayList<>();
            for (JsonNode a : req.get("args")) {
                args.add(a.asText());
            }
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            int code = 0;
            System.setOut(new PrintStream(out, true, "UTF-8"));
            System.setErr(new PrintStream(err, true, "UTF-8"));
            try {
                // Scala's println goes to Console.out, captured once: redirect it too (a dynamic variable)
                scala.Console$.MODULE$.withOut(out, () -> scala.Console$.MODULE$.withErr(err, () -> {
                    try {
                        configCommand.invoke(null, (Object) args.toArray(new String[0]));
                    } catch (InvocationTargetException e) {
                        if (e.getCause() instanceof RuntimeException) throw (RuntimeException) e.getCause();
                        throw new RuntimeException(e.getCause());
                    } catch (IllegalAccessException e) {
                        throw new RuntimeException(e);
                    }
                    return null;
                }));
            } catch (ExitCalled e) {
                code = e.code;
            } finally {
                System.out.flush();
                System.err.flush();
                System.setOut(realOut);
                System.setErr(realErr);
            }
            ObjectNode answer = json.createObjectNode();
            answer.put("exit", code);
            answer.put("out", new String(out.toByteArray(), StandardCharsets.UTF_8));
            answer.put("err", new String(err.toByteArray(), StandardCharsets.UTF_8));
            return answer;
        });
    }
}
