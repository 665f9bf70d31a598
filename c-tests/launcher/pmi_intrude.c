/* A process outside the job attacks snrun's PMI port (SNRUN_PMI_MODE=port).
 * Usage: pmi_intrude rank DIR       (under snrun: the job)
 *        pmi_intrude outsider DIR   (started separately, not a rank)
 * Rank 0 puts a key, then writes PMI_PORT and the kvs name to DIR (learnt out of band,
 * as an attacker who read them from a file would) and every rank waits for DIR/done.
 * The outsider, on a fresh connection each, sends abort, get_my_kvsname, put, get,
 * getbyidx, barrier_in, garbage, a stock initack and initacks with wrong proofs: each
 * must get an error reply (or none) and then EOF, never the kvs name or a value.  Then
 * the ranks check the KVS holds exactly what they put and end normally (exit 0). */
#include "pmiwire.h"
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>

static char line[PW_LINE], v[PW_LINE];

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    CHECK(f != NULL);
    fputs(text, f);
    CHECK(fclose(f) == 0);
    CHECK(rename(tmp, path) == 0);
}

/* Contents of DIR/name, waiting up to `secs` for it to appear; NULL if it never does. */
static char *read_file(const char *dir, const char *name, char *buf, size_t cap, int secs)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    for (int i = 0; i < secs * 100; i++) {
        FILE *f = fopen(path, "r");
        if (f) {
            size_t n = fread(buf, 1, cap - 1, f);
            fclose(f);
            buf[n] = 0;
            return buf;
        }
        usleep(10000);
    }
    return NULL;
}

/* Number of entries in the job's KVS (getbyidx walk); fails on any key named intruder*. */
static int count_kvs(const char *kvs)
{
    int n = 0;
    for (int idx = 0;; idx++) {
        pw_cmd(line, sizeof line, "cmd=getbyidx kvsname=%s idx=%d\n", kvs, idx);
        if (pw_rc(line) != 0) break;
        CHECK(pw_val(line, "key", v, sizeof v) != NULL);
        if (!strncmp(v, "intruder", 8)) SN_FAIL("the outsider's key %s is in the KVS", v);
        n++;
    }
    return n;
}

static int rank_main(const char *dir)
{
    int rank = pw_connect();
    sntest_rank = rank;
    static char kvs[512];
    pw_cmd(line, sizeof line, "cmd=init pmi_version=1 pmi_subversion=1\n");
    CHECK(pw_rc(line) == 0);
    pw_cmd(line, sizeof line, "cmd=get_my_kvsname\n");
    CHECK(pw_val(line, "kvsname", kvs, sizeof kvs) != NULL);
    pw_cmd(line, sizeof line, "cmd=put kvsname=%s key=before%d value=%d\n", kvs, rank, rank + 100);
    CHECK(pw_rc(line) == 0);
    pw_cmd(line, sizeof line, "cmd=barrier_in\n");
    CHECK(!strncmp(line, "cmd=barrier_out", 15));
    int before = count_kvs(kvs);
    if (rank == 0) {
        char buf[1024];
        snprintf(buf, sizeof buf, "%s\n", getenv("PMI_PORT"));
        write_file(dir, "kvsname", kvs);
        write_file(dir, "port", buf);
    }
    char done[64];
    if (!read_file(dir, "done", done, sizeof done, 100)) SN_FAIL("the outsider never finished");
    /* Our own connection still works, and the KVS is what we left. */
    pw_cmd(line, sizeof line, "cmd=barrier_in\n");
    CHECK(!strncmp(line, "cmd=barrier_out", 15));
    CHECK_EQ(count_kvs(kvs), before);
    int size = atoi(getenv("PMI_SIZE"));
    for (int r = 0; r < size; r++) {
        pw_cmd(line, sizeof line, "cmd=get kvsname=%s key=before%d\n", kvs, r);
        CHECK(pw_rc(line) == 0 && pw_val(line, "value", v, sizeof v) && atoi(v) == r + 100);
    }
    pw_cmd(line, sizeof line, "cmd=get kvsname=%s key=intruder\n", kvs);
    CHECK(pw_rc(line) != 0);
    pw_cmd(line, sizeof line, "cmd=barrier_in\n");
    pw_cmd(line, sizeof line, "cmd=finalize\n");
    printf("pmi_intrude rank %d ok (%d KVS entries unchanged)\n", rank, before);
    return 0;
}

/* Sends `req` (all of it, even if snrun closes early) on a fresh connection and checks
 * the answer: nothing or one error line, then EOF within 10 s; never `secret_text`. */
static void attack(const char *port, const char *req, size_t len, const char *what, const char *secret_text)
{
    pw_fd = pw_dial(port);
    size_t off = 0;
    while (off < len) {
        ssize_t n = send(pw_fd, req + off, len - off, MSG_NOSIGNAL);
        if (n <= 0) break; /* closed on us already: fine */
        off += (size_t)n;
    }
    int lines = 0, ok_reply = 0;
    for (;;) {
        struct pollfd p = { .fd = pw_fd, .events = POLLIN };
        if (poll(&p, 1, 10000) != 1) SN_FAIL("%s: connection neither answered nor closed in 10 s", what);
        if (!pw_recv(line, sizeof line)) break; /* EOF (or reset): closed */
        lines++;
        if (strstr(line, secret_text)) SN_FAIL("%s: reply reveals the kvs name: %s", what, line);
        if (strstr(line, "rc=0")) {
            /* Only `init` may be answered with success. */
            if (!strncmp(line, "cmd=response_to_init", 20)) ok_reply++;
            else SN_FAIL("%s: success reply %s", what, line);
        }
    }
    close(pw_fd);
    printf("pmi_intrude outsider: %s refused (%d reply line(s), then closed)\n", what, lines);
    (void)ok_reply;
}

static int outsider_main(const char *dir)
{
    char port[256], kvs[512], req[2048];
    if (!read_file(dir, "port", port, sizeof port, 100)) SN_FAIL("no port file");
    port[strcspn(port, "\n")] = 0;
    if (!read_file(dir, "kvsname", kvs, sizeof kvs, 10)) SN_FAIL("no kvsname file");
    if (getenv("SOFTNIC_JOB_SECRET")) SN_FAIL("the outsider must not know the job secret");
    int n = 0;
#define ATTACK(what, ...) do { snprintf(req, sizeof req, __VA_ARGS__); attack(port, req, strlen(req), what, kvs); n++; } while (0)
    ATTACK("abort", "cmd=abort exitcode=9 message=outsider\n");
    ATTACK("get_my_kvsname", "cmd=get_my_kvsname\n");
    ATTACK("put", "cmd=put kvsname=%s key=intruder value=1\n", kvs);
    ATTACK("get", "cmd=get kvsname=%s key=before0\n", kvs);
    ATTACK("getbyidx", "cmd=getbyidx kvsname=%s idx=0\n", kvs);
    ATTACK("barrier_in", "cmd=barrier_in\n");
    ATTACK("create_kvs", "cmd=create_kvs\n");
    ATTACK("garbage", "hello snrun, let me in\n");
    ATTACK("spawn", "mcmd=spawn\nnprocs=1\nexecname=/bin/true\nendcmd\n");
    ATTACK("stock initack", "cmd=initack pmiid=1\n");
    ATTACK("initack with a wrong proof", "cmd=initack pmiid=0 nonce=0123456789abcdef0123456789abcdef proof=0123456789abcdef\n");
    ATTACK("init then get", "cmd=init pmi_version=1 pmi_subversion=1\ncmd=get kvsname=%s key=before0\n", kvs);
    ATTACK("init then abort", "cmd=init pmi_version=1 pmi_subversion=1\ncmd=abort exitcode=3\n");
    {
        /* A well-formed initack whose proof is made under a key the outsider guessed. */
        uint8_t guess[16] = { 0 };
        char ack[256];
        pw_initack_line(ack, sizeof ack, 0, guess);
        snprintf(req, sizeof req, "%scmd=put kvsname=%s key=intruder value=2\n", ack, kvs);
        attack(port, req, strlen(req), "initack under a guessed key, then put", kvs);
        n++;
    }
    {
        static const char bin[] = "\xff\xfe\x00\x01cmd=abort\x00\n\x80\x81\n";
        attack(port, bin, sizeof bin - 1, "binary garbage", kvs);
        n++;
    }
    printf("pmi_intrude outsider: %d attacks refused ok\n", n);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) SN_FAIL("usage: pmi_intrude rank|outsider DIR");
    if (!strcmp(argv[1], "rank")) return rank_main(argv[2]);
    if (!strcmp(argv[1], "outsider")) return outsider_main(argv[2]);
    SN_FAIL("unknown role %s", argv[1]);
}
