/* Checks the environment snrun gives each rank (PMI, uGNI, softnic and Portals
 * runtime variables), and prints the job-wide part
 * as one "JOBWIDE ..." line so the caller can check all ranks agree.
 * Usage: envcheck [ranks-per-node]     (as given to snrun -N; default: all)
 * EXPECT_PTAG / EXPECT_COOKIE: values PMI_GNI_* must have (pass-through test). */
#include "sntest.h"
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *need(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v) SN_FAIL("%s is not set", name);
    return v;
}

static long num(const char *name)
{
    const char *v = need(name);
    char *end;
    long x = strtol(v, &end, 10);
    if (*end) SN_FAIL("%s=%s is not a decimal number", name, v);
    return x;
}

int main(int argc, char **argv)
{
    long rank = num("PMI_RANK"), size = num("PMI_SIZE");
    sntest_rank = (int)rank;
    long ppn = argc > 1 ? atol(argv[1]) : size;
    CHECK(rank >= 0 && rank < size);
    CHECK_EQ(num("ALPS_APP_PE"), rank);

    /* PMI_FD is an open, inherited socket. */
    int fd = (int)num("PMI_FD");
    struct stat st;
    CHECK(fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode));
    CHECK((fcntl(fd, F_GETFD) & FD_CLOEXEC) == 0);

    const char *job = need("PMI_JOBID");
    CHECK(!strcmp(job, need("SOFTNIC_JOBID")));

    long node = rank / ppn;
    long last = (size - 1) / ppn;
    long lsize = node == last ? size - last * ppn : ppn;
    CHECK_EQ(num("SOFTNIC_NODE_ID"), node);
    CHECK_EQ(num("SOFTNIC_LOCAL_RANK"), rank % ppn);
    CHECK_EQ(num("SOFTNIC_LOCAL_SIZE"), lsize);
    CHECK_EQ(num("PMI_GNI_LOC_ADDR"), node);
    CHECK_EQ(num("PMI_GNI_DEV_ID"), 0);
    long ptag = num("PMI_GNI_PTAG"), cookie = num("PMI_GNI_COOKIE");
    CHECK(ptag > 0 && ptag < 256);
    CHECK(cookie > 0);
    if (getenv("EXPECT_PTAG")) CHECK_EQ(ptag, atol(getenv("EXPECT_PTAG")));
    if (getenv("EXPECT_COOKIE")) CHECK_EQ(cookie, atol(getenv("EXPECT_COOKIE")));

    /* The Portals runtime's variables: this rank, every rank's NID (node) and PID
     * (index on the node), the job id. */
    CHECK_EQ(num("PTL_MY_RID"), rank);
    const char *nm = need("PTL_NIDMAP"), *pm = need("PTL_PIDMAP");
    long jid = num("PTL_MY_JID");
    CHECK(jid > 0 && jid != 0xffffffffL);
    for (long r = 0; r < size; r++) {
        char *e1, *e2;
        long nid = strtol(nm, &e1, 10), pid = strtol(pm, &e2, 10);
        CHECK_EQ(nid, r / ppn);
        CHECK_EQ(pid, r % ppn);
        CHECK(*e1 == (r + 1 < size ? ':' : '\0') && *e2 == *e1);
        nm = e1 + (*e1 != 0);
        pm = e2 + (*e2 != 0);
    }
    printf("JOBWIDE job=%s size=%ld ptag=%ld cookie=%ld dev=0 ptl_jid=%ld nidmap=%s pidmap=%s\n", job, size, ptag, cookie, jid, getenv("PTL_NIDMAP"), getenv("PTL_PIDMAP"));
    printf("RANK %ld ok\n", rank);
    return 0;
}
