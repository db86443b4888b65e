/* fwdoctor fixture: the version macros of a cuDNN 8.9.3 cudnn_version.h as quoted verbatim in
   moments-behavior/docs@045fda540313d7845714cb80ab4e79a8c92514e8:docs/red/installation/cudnn.md;
   the rest of the header is omitted. */
#define CUDNN_MAJOR 8
#define CUDNN_MINOR 9
#define CUDNN_PATCHLEVEL 3

#define CUDNN_VERSION (CUDNN_MAJOR * 1000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)
