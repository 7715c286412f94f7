// Stage-1 init of the test-bed guest (tests/vm/run.sh), linked statically
// and packed alone into the initramfs with the few modules it needs.
//
// It loads the modules listed in /modules/order (virtio PCI and 9p), mounts the
// host's root file system (9p tag "hostroot", read-only) and makes it the root,
// then runs the stage-2 script named by iofleet_stage2= on the kernel command
// line as a child. As PID 1 it reaps orphans until that child exits, syncs and
// powers the guest off. Failures print "iofleet-vm: ..." and power off: the
// host sees no exit status file and reports a boot failure.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void Die(const char* what) {
  fprintf(stderr, "iofleet-vm: stage 1: %s: %s\n", what, strerror(errno));
  sync();
  reboot(RB_POWER_OFF);
  for (;;) pause();
}

static void LoadModules(void) {
  FILE* order = fopen("/modules/order", "r");
  if (order == NULL) Die("open /modules/order");
  char name[256];
  while (fgets(name, sizeof(name), order) != NULL) {
    name[strcspn(name, "\n")] = '\0';
    if (name[0] == '\0') continue;
    char path[300];
    snprintf(path, sizeof(path), "/modules/%s", name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) Die(path);
    if (syscall(SYS_finit_module, fd, "", 0) != 0 && errno != EEXIST) Die(path);
    close(fd);
  }
  fclose(order);
}

int main(void) {
  mkdir("/dev", 0755);
  if (mount("devtmpfs", "/dev", "devtmpfs", 0, NULL) != 0 && errno != EBUSY) Die("mount /dev");
  int console = open("/dev/console", O_RDWR);
  if (console >= 0) {
    dup2(console, 0);
    dup2(console, 1);
    dup2(console, 2);
    if (console > 2) close(console);
  }
  const char* stage2 = getenv("iofleet_stage2");
  const char* msize = getenv("iofleet_msize");
  if (stage2 == NULL) {
    errno = EINVAL;
    Die("no iofleet_stage2= on the kernel command line");
  }
  LoadModules();
  mkdir("/newroot", 0755);
  char opts[200];
  snprintf(opts, sizeof(opts), "trans=virtio,version=9p2000.L,cache=loose,msize=%s",
           msize != NULL ? msize : "512000");
  if (mount("hostroot", "/newroot", "9p", MS_RDONLY, opts) != 0) Die("mount 9p hostroot");
  if (mount("/dev", "/newroot/dev", NULL, MS_MOVE, NULL) != 0) Die("move /dev");
  if (chdir("/newroot") != 0) Die("chdir /newroot");
  if (mount(".", "/", NULL, MS_MOVE, NULL) != 0) Die("move root");
  if (chroot(".") != 0) Die("chroot");
  if (chdir("/") != 0) Die("chdir /");

  pid_t child = fork();
  if (child < 0) Die("fork");
  if (child == 0) {
    char* const argv[] = {"/bin/bash", (char*)stage2, NULL};
    char* const envp[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                          "HOME=/root", "TERM=dumb", "LANG=C.UTF-8", NULL};
    execve("/bin/bash", argv, envp);
    fprintf(stderr, "iofleet-vm: stage 1: exec %s: %s\n", stage2, strerror(errno));
    _exit(127);
  }
  for (;;) {
    int status = 0;
    pid_t pid = wait(&status);
    if (pid == child) break;
    if (pid < 0 && errno == ECHILD) break;
  }
  sync();
  reboot(RB_POWER_OFF);
  return 0;
}
