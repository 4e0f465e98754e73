import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.File;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.UnknownHostException;

/**
 * How a broker keys an ip quota: {@code InetAddress.getByName(name)} (ZooKeeper-mode {@code IpConfigHandler},
 * KRaft's {@code ClientQuotaMetadataManager}; the same call validates in {@code isValidIpEntity}).
 * {"s": "..."} -> {"kind": "address", "family": 4|6, "hex": "<address bytes>"}
 *              | {"kind": "resolver"}  (not a literal: the name went to the name service)
 *              | {"kind": "invalid"}   (UnknownHostException without asking the name service).
 * The name service is a hosts file with no entries, so nothing here depends on DNS; a lookup is recognised by the
 * name-service frame on the exception's stack.
 */
public final class InetOracle {
    public static void main(String[] args) throws Exception {
        File empty = File.createTempFile("inet-oracle-hosts", ".txt");
        empty.deleteOnExit();
        System.setProperty("jdk.net.hosts.file", empty.getAbsolutePath());
        // no negative cache: a cached failure would not show the name-service frame the second time
        java.security.Security.setProperty("networkaddress.cache.negative.ttl", "0");
        OracleLoop.run((req, json) -> {
            String s = req.get("s").asText();
            ObjectNode out = json.createObjectNode();
            try {
                InetAddress a = InetAddress.getByName(s);
                out.put("kind", "address");
                out.put("family", a instanceof Inet4Address ? 4 : 6);
                StringBuilder hex = new StringBuilder();
                for (byte b : a.getAddress()) hex.append(String.format("%02x", b & 0xff));
                out.put("hex", hex.toString());
            } catch (UnknownHostException e) {
                boolean lookedUp = false;
                for (Throwable t = e; t != null && !lookedUp; t = t.getCause()) {
                    for (StackTraceElement f : t.getStackTrace()) {
                        if (f.getMethodName().equals("getAddressesFromNameService")) lookedUp = true;
                    }
                }
                out.put("kind", lookedUp ? "resolver" : "invalid");
            }
            return out;
        });
    }
}
