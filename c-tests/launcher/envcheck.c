/* Checks the environment snrun gives each rank, and prints the job-wide part
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

    printf("JOBWIDE job=%s size=%ld ptag=%ld cookie=%ld dev=0\n", job, size, ptag, cookie);
    printf("RANK %ld ok\n", rank);
    return 0;
}
