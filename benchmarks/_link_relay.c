/* The packet relay of benchmarks/_link.py: an emulated network link between two tun devices.
 *
 *     _link_relay TUN_A TUN_B DELAY_US RATE_BPS BUFFER_US QUEUE_BYTES OFFLOAD
 *
 * Creates the tun devices TUN_A and TUN_B (not persistent: they vanish when this process
 * exits), prints "ready" on stdout and then forwards every packet read from one device to the
 * other DELAY_US microseconds after it arrived, first in first out in each direction.
 *
 * With RATE_BPS > 0 each direction is also a serializing link of that many bits per second: a
 * packet starts to leave only when the one before it has left, and a packet that would wait
 * longer than BUFFER_US for that is dropped (tail drop), as a router's buffer would. At most
 * QUEUE_BYTES are in flight per direction; a packet beyond that is dropped too.
 *
 * OFFLOAD 1 opens the devices with a virtio-net header and TCP segmentation offload, as a
 * NIC with TSO and GRO: the kernel hands over a TCP send of up to 64 KiB as one packet that
 * stands for many segments of the MTU, and the other device takes it whole. The stacks still
 * see the MTU (the segment size, the windows and the congestion control are the MTU's), the
 * delay applies to the whole burst as it would to back-to-back segments, and the relay moves
 * a few tens of packets where it would otherwise move thousands, so it is not the bottleneck.
 * OFFLOAD 0 moves every MTU-sized packet on its own.
 *
 * One reader and one writer thread per direction, joined by a single-producer single-consumer
 * ring of packet buffers. The writer sleeps until the oldest packet is due (clock_nanosleep,
 * absolute, on CLOCK_MONOTONIC) and then writes it. On SIGTERM, SIGINT or SIGHUP, or when the
 * parent process dies, it prints the packets, bytes and drops of each direction on stderr and
 * exits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <linux/virtio_net.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define RING 65536                       /* packets in flight per direction, at most */
#define MAX_PACKET (65536 + 256)         /* a 64 KiB GSO packet and its virtio-net header */

typedef struct {
    int64_t due;   /* CLOCK_MONOTONIC ns at which it is written out */
    uint32_t len;
    unsigned char *data;
} slot_t;

typedef struct {
    const char *name;
    int in, out;
    int64_t delay_ns, buffer_ns, queue_bytes;
    double ns_per_byte;    /* 0: no rate cap */
    int64_t link_free;     /* when the serializer has sent the last accepted packet */
    slot_t ring[RING];
    _Atomic uint64_t head, tail;
    _Atomic int64_t in_flight;
    _Atomic int sleeping;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    _Atomic uint64_t packets, bytes, dropped_full, dropped_buffer, write_errors;
} dir_t;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int open_tun(const char *name, int offload) {
    int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        perror("open /dev/net/tun");
        exit(2);
    }
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    ifr.ifr_flags = IFF_TUN | IFF_NO_PI | (offload ? IFF_VNET_HDR : 0);
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
    if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
        fprintf(stderr, "TUNSETIFF %s: %s\n", name, strerror(errno));
        exit(2);
    }
    if (offload) {
        int hdr = sizeof(struct virtio_net_hdr);
        unsigned flags = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN;
        if (ioctl(fd, TUNSETVNETHDRSZ, &hdr) < 0 || ioctl(fd, TUNSETOFFLOAD, flags) < 0) {
            fprintf(stderr, "offload on %s: %s\n", name, strerror(errno));
            exit(2);
        }
    }
    return fd;
}

static void *reader(void *arg) {
    dir_t *d = arg;
    unsigned char *buf = NULL;
    for (;;) {
        if (!buf && !(buf = malloc(MAX_PACKET))) {
            fprintf(stderr, "%s: out of memory\n", d->name);
            exit(3);
        }
        ssize_t n = read(d->in, buf, MAX_PACKET);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            fprintf(stderr, "%s: read: %s\n", d->name, strerror(errno));
            exit(3);
        }
        if (n == 0)
            continue;
        uint64_t tail = atomic_load_explicit(&d->tail, memory_order_relaxed);
        uint64_t head = atomic_load_explicit(&d->head, memory_order_acquire);
        if (tail - head >= RING ||
            atomic_load_explicit(&d->in_flight, memory_order_relaxed) + n > d->queue_bytes) {
            atomic_fetch_add_explicit(&d->dropped_full, 1, memory_order_relaxed);
            continue;
        }
        int64_t t = now_ns();
        int64_t sent = t;
        if (d->ns_per_byte > 0) {
            int64_t start = d->link_free > t ? d->link_free : t;
            if (start - t > d->buffer_ns) {
                atomic_fetch_add_explicit(&d->dropped_buffer, 1, memory_order_relaxed);
                continue;
            }
            sent = start + (int64_t)(n * d->ns_per_byte);
            d->link_free = sent;
        }
        slot_t *s = &d->ring[tail & (RING - 1)];
        /* A small packet (an ACK) gives back the rest of its buffer. */
        if (n < 4096) {
            unsigned char *small = realloc(buf, (size_t)n);
            if (small)
                buf = small;
        }
        s->data = buf;
        buf = NULL;
        s->len = (uint32_t)n;
        s->due = sent + d->delay_ns;
        atomic_fetch_add_explicit(&d->in_flight, n, memory_order_relaxed);
        atomic_store_explicit(&d->tail, tail + 1, memory_order_seq_cst);
        if (atomic_load_explicit(&d->sleeping, memory_order_seq_cst)) {
            pthread_mutex_lock(&d->mu);
            pthread_cond_signal(&d->cv);
            pthread_mutex_unlock(&d->mu);
        }
    }
    return NULL;
}

static void *writer(void *arg) {
    dir_t *d = arg;
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    for (;;) {
        uint64_t head = atomic_load_explicit(&d->head, memory_order_relaxed);
        if (atomic_load_explicit(&d->tail, memory_order_acquire) == head) {
            pthread_mutex_lock(&d->mu);
            atomic_store_explicit(&d->sleeping, 1, memory_order_seq_cst);
            while (atomic_load_explicit(&d->tail, memory_order_seq_cst) == head)
                pthread_cond_wait(&d->cv, &d->mu);
            atomic_store_explicit(&d->sleeping, 0, memory_order_relaxed);
            pthread_mutex_unlock(&d->mu);
        }
        slot_t *s = &d->ring[head & (RING - 1)];
        if (s->due > now_ns()) {
            struct timespec ts = {s->due / 1000000000, s->due % 1000000000};
            while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
            }
        }
        if (write(d->out, s->data, s->len) < 0) {
            /* The device is down or being moved: the packet is lost, as on a real link. */
            atomic_fetch_add_explicit(&d->write_errors, 1, memory_order_relaxed);
        } else {
            atomic_fetch_add_explicit(&d->packets, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&d->bytes, s->len, memory_order_relaxed);
        }
        atomic_fetch_sub_explicit(&d->in_flight, s->len, memory_order_relaxed);
        free(s->data);
        s->data = NULL;
        atomic_store_explicit(&d->head, head + 1, memory_order_release);
    }
    return NULL;
}

static void init_dir(dir_t *d, const char *name, int in, int out, int64_t delay_ns,
                     double rate_bps, int64_t buffer_ns, int64_t queue_bytes) {
    d->name = name;
    d->in = in;
    d->out = out;
    d->delay_ns = delay_ns;
    d->buffer_ns = buffer_ns;
    d->queue_bytes = queue_bytes;
    d->ns_per_byte = rate_bps > 0 ? 8e9 / rate_bps : 0;
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
}

static void report(dir_t *d) {
    fprintf(stderr, "%s: %llu packets, %llu bytes, %llu dropped (queue full), %llu dropped "
            "(buffer), %llu write errors\n", d->name,
            (unsigned long long)atomic_load(&d->packets),
            (unsigned long long)atomic_load(&d->bytes),
            (unsigned long long)atomic_load(&d->dropped_full),
            (unsigned long long)atomic_load(&d->dropped_buffer),
            (unsigned long long)atomic_load(&d->write_errors));
}

int main(int argc, char **argv) {
    if (argc != 8) {
        fprintf(stderr, "usage: %s TUN_A TUN_B DELAY_US RATE_BPS BUFFER_US QUEUE_BYTES "
                "OFFLOAD\n", argv[0]);
        return 2;
    }
    int64_t delay_ns = atoll(argv[3]) * 1000;
    double rate = atof(argv[4]);
    int64_t buffer_ns = atoll(argv[5]) * 1000;
    int64_t queue_bytes = atoll(argv[6]);
    int offload = atoi(argv[7]);

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);  /* inherited by the threads */
    prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
    if (getppid() == 1)
        return 1;

    int a = open_tun(argv[1], offload), b = open_tun(argv[2], offload);
    static dir_t ab, ba;
    char *name_ab, *name_ba;
    if (asprintf(&name_ab, "%s->%s", argv[1], argv[2]) < 0 ||
        asprintf(&name_ba, "%s->%s", argv[2], argv[1]) < 0)
        return 2;
    init_dir(&ab, name_ab, a, b, delay_ns, rate, buffer_ns, queue_bytes);
    init_dir(&ba, name_ba, b, a, delay_ns, rate, buffer_ns, queue_bytes);
    pthread_t t[4];
    pthread_create(&t[0], NULL, reader, &ab);
    pthread_create(&t[1], NULL, writer, &ab);
    pthread_create(&t[2], NULL, reader, &ba);
    pthread_create(&t[3], NULL, writer, &ba);
    printf("ready\n");
    fflush(stdout);
    int sig;
    sigwait(&set, &sig);
    report(&ab);
    report(&ba);
    fflush(stderr);
    _exit(0);
}
