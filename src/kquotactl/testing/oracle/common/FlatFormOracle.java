import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.utils.Exit;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.AccessibleObject;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

/**
 * kafka-configs' command-line front end, up to the point where it would connect: {@code ConfigCommand}'s
 * own option parsing (Scala {@code kafka.admin.ConfigCommand} up to 4.1, Java {@code org.apache.kafka.tools.ConfigCommand}
 * in the kafka-tools artifact from 4.2; whichever the class path has) ({@code new ConfigCommandOptions(args)}: jopt-simple), {@code checkArgs()}, and for an alter
 * {@code parseConfigsToBeAdded} / {@code parseConfigsToBeDeleted}, exactly as {@code main} runs them.
 *
 * <p>{"args": [...]} -> {"ok": true, "action": "alter"|"describe", "zookeeper": bool, "types": [...], "names": [...],
 * "adds": [[k, v], ...], "deletes": [...]}; a refusal is {"refused": "<exception class or exit>", "message": "..."}
 * with what {@code main} prints first to stderr ({@code e.getMessage}, or the line before the usage text).
 *
 * <p>{"args": [...], "run": true} runs {@code ConfigCommand.main} itself (it connects to the cluster the line names)
 * -> {"exit": status, "stdout": ..., "stderr": ...}.
 */
public final class FlatFormOracle {
    static final class ExitCalled extends RuntimeException {
        final int status;

        ExitCalled(int status) {
            super("exit " + status);
            this.status = status;
        }
    }

    /** Scala's {@code Console.out}/{@code err} bind to System.out/err once: they get these, pointed per request. */
    static final class Switch extends OutputStream {
        volatile OutputStream to = OutputStream.nullOutputStream();

        @Override
        public void write(int b) throws IOException {
            to.write(b);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            to.write(b, off, len);
        }
    }

    public static void main(String[] argv) throws Exception {
        Exit.setExitProcedure((status, message) -> {
            throw new ExitCalled(status);
        });
        Class<?> optsClass = javaConfigCommand()
            ? Class.forName("org.apache.kafka.tools.ConfigCommand$ConfigCommandOptions")
            : Class.forName("kafka.admin.ConfigCommand$ConfigCommandOptions");
        // the Java class's static methods, or the Scala object's (no static forwarders)
        Class<?> command = Class.forName(javaConfigCommand() ? "org.apache.kafka.tools.ConfigCommand" : "kafka.admin.ConfigCommand$");
        Object module = javaConfigCommand() ? null : command.getField("MODULE$").get(null);
        Method mainMethod = Class.forName(javaConfigCommand() ? "org.apache.kafka.tools.ConfigCommand" : "kafka.admin.ConfigCommand")
            .getMethod("main", String[].class);
        Constructor<?> newOpts = optsClass.getDeclaredConstructor(String[].class);
        Method checkArgs = optsClass.getMethod("checkArgs");
        Method types = optsClass.getDeclaredMethod("entityTypes");
        Method names = optsClass.getDeclaredMethod("entityNames");
        Method toAdd = command.getDeclaredMethod("parseConfigsToBeAdded", optsClass);
        Method toDelete = command.getDeclaredMethod("parseConfigsToBeDeleted", optsClass);
        for (AccessibleObject m : new AccessibleObject[] {newOpts, checkArgs, types, names, toAdd, toDelete}) {
            m.setAccessible(true);  // the Java ConfigCommand's options class and these are package-private
        }
        PrintStream realErr = System.err;
        PrintStream realOut = System.out;
        Switch outSwitch = new Switch();
        Switch errSwitch = new Switch();
        PrintStream outStream = new PrintStream(outSwitch, true, "UTF-8");
        PrintStream errStream = new PrintStream(errSwitch, true, "UTF-8");
        System.setOut(outStream);
        System.setErr(errStream);
        scala.Console.out();  // bound now, to the switches, for good
        scala.Console.err();
        System.setOut(realOut);
        System.setErr(realErr);

        OracleLoop.run((req, json) -> {
            List<String> list = new ArrayList<>();
            for (JsonNode a : req.get("args")) list.add(a.asText());
            String[] args = list.toArray(new String[0]);
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            outSwitch.to = out;
            errSwitch.to = err;
            System.setErr(errStream);
            System.setOut(outStream);
            ObjectNode answer = json.createObjectNode();
            if (req.path("run").asBoolean(false)) {  // the whole command, against the cluster the line names
                try {
                    mainMethod.invoke(null, (Object) args);
                    answer.put("exit", 0);
                } catch (InvocationTargetException e) {
                    if (!(e.getCause() instanceof ExitCalled)) throw e;
                    answer.put("exit", ((ExitCalled) e.getCause()).status);
                } finally {
                    restore(realOut, realErr, outSwitch, errSwitch);
                }
                answer.put("stdout", new String(out.toByteArray(), StandardCharsets.UTF_8));
                answer.put("stderr", new String(err.toByteArray(), StandardCharsets.UTF_8));
                return answer;
            }
            try {
                Object opts = newOpts.newInstance((Object) args);
                checkArgs.invoke(opts);
                joptsimple.OptionSet set = optionSet(opts);
                boolean alter = set.has("alter");
                answer.put("ok", true);
                answer.put("action", alter ? "alter" : "describe");
                answer.put("zookeeper", set.has("zookeeper"));
                answer.set("types", strings(json.createArrayNode(), types.invoke(opts)));
                answer.set("names", strings(json.createArrayNode(), names.invoke(opts)));
                if (alter) {
                    Properties props = (Properties) toAdd.invoke(module, opts);
                    ArrayNode adds = json.createArrayNode();
                    for (String k : props.stringPropertyNames()) {
                        ArrayNode kv = json.createArrayNode();
                        kv.add(k);
                        kv.add(props.getProperty(k));
                        adds.add(kv);
                    }
                    answer.set("adds", adds);
                    answer.set("deletes", strings(json.createArrayNode(), toDelete.invoke(module, opts)));
                }
            } catch (InvocationTargetException e) {
                answer.removeAll();  // refused part-way (parseConfigsToBeAdded): nothing of the parse counts
                Throwable cause = e.getCause();
                if (cause instanceof ExitCalled) {
                    answer.put("refused", "exit " + ((ExitCalled) cause).status);
                    String text = new String(err.toByteArray(), StandardCharsets.UTF_8);
                    int nl = text.indexOf('\n');
                    answer.put("message", nl >= 0 ? text.substring(0, nl) : text);
                } else {
                    answer.put("refused", cause.getClass().getSimpleName());
                    answer.put("message", String.valueOf(cause.getMessage()));
                }
            } finally {
                restore(realOut, realErr, outSwitch, errSwitch);
            }
            return answer;
        });
    }

    /** Java {@code org.apache.kafka.tools.ConfigCommand} (kafka-tools, 4.2+) when the class path has it. */
    private static boolean javaConfigCommand() {
        try {
            Class.forName("org.apache.kafka.tools.ConfigCommand");
            return true;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }

    private static void restore(PrintStream out, PrintStream err, Switch outSwitch, Switch errSwitch) {
        System.setOut(out);
        System.setErr(err);
        outSwitch.to = OutputStream.nullOutputStream();
        errSwitch.to = OutputStream.nullOutputStream();
    }

    /** 2.8's Scala CommandDefaultOptions has an {@code options()} accessor, 4.x's Java one a public field. */
    private static joptsimple.OptionSet optionSet(Object opts) throws ReflectiveOperationException {
        try {
            return (joptsimple.OptionSet) opts.getClass().getMethod("options").invoke(opts);
        } catch (NoSuchMethodException e) {
            return (joptsimple.OptionSet) opts.getClass().getField("options").get(opts);
        }
    }

    /** A Scala collection (up to 4.1) or a Java one (4.2+), as strings. */
    private static ArrayNode strings(ArrayNode into, Object items) {
        if (items instanceof Iterable) {
            for (Object item : (Iterable<?>) items) into.add(String.valueOf(item));
            return into;
        }
        scala.collection.Iterator<?> it = ((scala.collection.Iterable<?>) items).iterator();
        while (it.hasNext()) into.add(String.valueOf(it.next()));
        return into;
    }
}
