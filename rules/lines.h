/* Reading log lines the way the classifier needs them: the small string
 * tests it runs on every line, apart from the classifier's state. A leaf:
 * it knows no signal, fact or catalog. */
#ifndef CS_LINES_H
#define CS_LINES_H

#include <stddef.h>

/* Every tag a launcher puts before a job's line, in any order: torchrun's
 * rank or role tag, mpirun's "[1,3]<stderr>:", srun --label's "3: ", Ray's
 * "(pid=..., ip=...)" and daemon tags, pdsh's "HOST: " before a frame.
 * Their length, 0 when there is none; *rank gets the rank a tag names. */
size_t ln_launcher_prefix(const char *l, int *rank);
/* The text after "NVRM: " when the kernel line may be a piece of a driver
 * message printed over several lines, else NULL (an Xid report is one
 * line of its own). */
const char *ln_kmsg_part(const char *line);
/* num (a number) in unit (B, KiB, MB, GiB...) as bytes; -1: no unit. */
double ln_to_bytes(const char *num, const char *unit);
/* A Kubernetes event as `kubectl describe` (Type Reason Age From
 * Message, or without Age, or without Type, as tools and pastes trim it)
 * or `kubectl get events` (Last-seen Type Reason Object Message) print
 * it, columns apart by two spaces or more (a paste may leave one after
 * the type): "Reason: Message" in buf, the form the k8s signatures read.
 * 0 when the line is no such row (or buf is too small); buf NULL: the
 * row's shape only. */
int ln_kube_event(const char *l, char *buf, size_t len);
/* A Kubernetes event's message printed bare, without its reason (a job's
 * tooling, a pod's status `message:` or `kubectl describe pod`'s
 * `Message:` field, a paste of one event): the reason
 * told by how the kubelet's and controllers' messages open. The same
 * "Reason: Message" in buf, and the same answers as ln_kube_event. */
int ln_kube_message(const char *l, char *buf, size_t len);
/* An event as a component's event recorder logs it (klog's event.go:
 * "Event(v1.ObjectReference{...}): type: 'Warning' reason: 'R' message"):
 * "R: message" in buf, the same answers as ln_kube_event. */
int ln_kube_recorded(const char *l, char *buf, size_t len);
/* Any of them: an event row, a bare message, a recorded event. */
int ln_kube_text(const char *l, char *buf, size_t len);
/* A traceback's code line raising an exception with a literal message
 * (`raise ValueError("No available memory for the cache blocks. "`): the
 * exception line it stands for ("ValueError: No available memory...") in
 * buf. 0 when it is none, or its message is too short to say anything. */
int ln_raise_text(const char *l, char *buf, size_t len);
/* Whether a TensorFlow op name in text is in the gradient graph (the
 * backward pass): "gradients/...", "gradient_tape/...", "..._grad/...". */
int ln_backward_op(const char *text);
/* A traceback's frame line: indented (or autograd's engine call, which a
 * paste may have left flush). */
int ln_is_frame(const char *l);
/* A frame line that shows the backward pass (autograd, .backward()). */
int ln_backward_frame(const char *l);
/* A frame line with no traceback open: its head (and maybe the frames
 * before it) were lost. One that names a file ("  File \"x.py\", line
 * 3"), or the backward pass in its code, starts a traceback. */
int ln_loose_frame(const char *l);
/* A Python traceback's head line. */
int ln_trace_head(const char *l);
/* An exception line, indented or not ("    RuntimeError: ...", a traceback
 * pasted with an indent, or a nested one): not a frame. */
int ln_exception_line(const char *l);
/* One report line as the detail keeps it: no indent, no "- " bullet. */
const char *ln_report_piece(const char *line);
/* The line, trailing blanks aside, ends with ':' / with . ! or ?. */
int ln_ends_with_colon(const char *t);
int ln_ends_sentence(const char *l);

#endif
