/**
 * The console's words in English and Vietnamese. The language is the `lang` query parameter (the
 * switch's links; it is kept in the `lang` cookie), else that cookie, else the browser's
 * Accept-Language, else English.
 */

export const LANGUAGES = ['en', 'vi'] as const;
export type Lang = (typeof LANGUAGES)[number];

const EN = {
  appName: 'Task agent',
  skip: 'Skip to content',
  signedInAs: 'Signed in as',
  signOut: 'Sign out',
  language: 'Language',
  otherLanguage: 'Tiếng Việt',
  online: 'The task agent is online.',
  offline:
    'The task agent is offline: tasks, runs and logs are shown from its store. New tasks are queued and run when it is back; chat needs the agent.',
  tasks: 'Tasks',
  taskList: 'Task list',
  newTask: 'New task',
  title: 'Title',
  description: 'Description',
  descriptionHint: 'Optional. What the agent should do, with the details it needs.',
  priority: 'Priority',
  create: 'Create task',
  filter: 'Show',
  filterButton: 'Filter',
  all: 'All',
  status: 'Status',
  created: 'Created',
  updated: 'Updated',
  task: 'Task',
  noTasks: 'No tasks here.',
  previous: 'Previous',
  next: 'Next',
  page: 'Page',
  cancel: 'Cancel task',
  cancelTitle: 'Cancel task {id}',
  back: 'All tasks',
  result: 'Result',
  noResult: 'No result yet.',
  attempts: 'Attempts',
  runs: 'Runs',
  noRuns: 'No runs yet.',
  run: 'Run',
  worker: 'Worker',
  steps: 'Steps',
  started: 'Started',
  finished: 'Finished',
  output: 'Output',
  error: 'Error',
  logs: 'Logs',
  noLogs: 'No logs yet.',
  time: 'Time',
  level: 'Level',
  message: 'Message',
  refresh: 'Refresh',
  following: 'Following new log lines…',
  chat: 'Chat with the agent',
  chatOffline: 'Chat works only while the task agent is online.',
  chatMessage: 'Your message',
  send: 'Send',
  you: 'You',
  agent: 'Agent',
  chatAgain: 'Back to the console',
  errorTitle: 'That did not work',
  created_ok: 'Task {id} created.',
  queued_ok: 'Task {id} queued: it runs when the task agent is back.',
  cancelled_ok: 'Task {id} cancelled.',
  signInTitle: 'Sign in to the task agent',
  signIn: 'Sign in',
  username: 'Username',
  password: 'Password',
  alreadySignedIn: 'You are signed in as {user}. Signing in again starts a new session.',
  notFound: 'Not found',
  low: 'low',
  normal: 'normal',
  high: 'high',
  urgent: 'urgent',
  'status.pending': 'Pending',
  'status.running': 'Running',
  'status.done': 'Done',
  'status.failed': 'Failed',
  'status.cancelled': 'Cancelled',
  'group.pending': 'pending, queued, waiting',
  'group.running': 'running, in progress, active',
  'group.done': 'done, completed, success',
  'group.failed': 'failed, error',
  'group.cancelled': 'cancelled',
  'level.info': 'info',
  'level.warn': 'warning',
  'level.error': 'error',
} as const;

export type MessageKey = keyof typeof EN;

const VI: Readonly<Record<MessageKey, string>> = {
  appName: 'Tác tử công việc',
  skip: 'Chuyển đến nội dung',
  signedInAs: 'Đã đăng nhập:',
  signOut: 'Đăng xuất',
  language: 'Ngôn ngữ',
  otherLanguage: 'English',
  online: 'Tác tử công việc đang trực tuyến.',
  offline:
    'Tác tử công việc đang ngoại tuyến: công việc, lượt chạy và nhật ký được hiển thị từ kho dữ liệu. Công việc mới được xếp hàng và chạy khi tác tử hoạt động lại; trò chuyện cần tác tử.',
  tasks: 'Công việc',
  taskList: 'Danh sách công việc',
  newTask: 'Công việc mới',
  title: 'Tiêu đề',
  description: 'Mô tả',
  descriptionHint: 'Không bắt buộc. Tác tử cần làm gì, kèm các chi tiết cần thiết.',
  priority: 'Độ ưu tiên',
  create: 'Tạo công việc',
  filter: 'Hiển thị',
  filterButton: 'Lọc',
  all: 'Tất cả',
  status: 'Trạng thái',
  created: 'Tạo lúc',
  updated: 'Cập nhật',
  task: 'Công việc',
  noTasks: 'Không có công việc nào.',
  previous: 'Trang trước',
  next: 'Trang sau',
  page: 'Trang',
  cancel: 'Hủy công việc',
  cancelTitle: 'Hủy công việc {id}',
  back: 'Tất cả công việc',
  result: 'Kết quả',
  noResult: 'Chưa có kết quả.',
  attempts: 'Số lần thử',
  runs: 'Lượt chạy',
  noRuns: 'Chưa có lượt chạy nào.',
  run: 'Lượt',
  worker: 'Tiến trình',
  steps: 'Số bước',
  started: 'Bắt đầu',
  finished: 'Kết thúc',
  output: 'Đầu ra',
  error: 'Lỗi',
  logs: 'Nhật ký',
  noLogs: 'Chưa có nhật ký.',
  time: 'Thời gian',
  level: 'Mức',
  message: 'Nội dung',
  refresh: 'Làm mới',
  following: 'Đang theo dõi nhật ký mới…',
  chat: 'Trò chuyện với tác tử',
  chatOffline: 'Chỉ trò chuyện được khi tác tử công việc trực tuyến.',
  chatMessage: 'Tin nhắn của bạn',
  send: 'Gửi',
  you: 'Bạn',
  agent: 'Tác tử',
  chatAgain: 'Quay lại bảng điều khiển',
  errorTitle: 'Không thực hiện được',
  created_ok: 'Đã tạo công việc {id}.',
  queued_ok: 'Công việc {id} đã được xếp hàng: sẽ chạy khi tác tử hoạt động lại.',
  cancelled_ok: 'Đã hủy công việc {id}.',
  signInTitle: 'Đăng nhập vào tác tử công việc',
  signIn: 'Đăng nhập',
  username: 'Tên đăng nhập',
  password: 'Mật khẩu',
  alreadySignedIn: 'Bạn đang đăng nhập với tên {user}. Đăng nhập lại sẽ bắt đầu phiên mới.',
  notFound: 'Không tìm thấy',
  low: 'thấp',
  normal: 'bình thường',
  high: 'cao',
  urgent: 'khẩn cấp',
  'status.pending': 'Đang chờ',
  'status.running': 'Đang chạy',
  'status.done': 'Hoàn thành',
  'status.failed': 'Thất bại',
  'status.cancelled': 'Đã hủy',
  'group.pending': 'đang chờ, xếp hàng',
  'group.running': 'đang chạy, đang xử lý',
  'group.done': 'hoàn thành, thành công',
  'group.failed': 'thất bại, lỗi',
  'group.cancelled': 'đã hủy',
  'level.info': 'thông tin',
  'level.warn': 'cảnh báo',
  'level.error': 'lỗi',
};

const MESSAGES: Readonly<Record<Lang, Readonly<Record<MessageKey, string>>>> = { en: EN, vi: VI };

export type Translate = (key: MessageKey, vars?: Readonly<Record<string, string | number>>) => string;

export function translator(lang: Lang): Translate {
  const table = MESSAGES[lang];
  return (key, vars) => {
    let text = table[key];
    if (vars !== undefined)
      for (const [name, value] of Object.entries(vars)) text = text.replaceAll(`{${name}}`, String(value));
    return text;
  };
}

export function isLang(value: unknown): value is Lang {
  return typeof value === 'string' && (LANGUAGES as readonly string[]).includes(value);
}

/**
 * The best of `en` and `vi` for an Accept-Language header (`vi-VN,vi;q=0.9,en;q=0.8` → vi); English
 * when it names neither.
 */
export function fromAcceptLanguage(header: string | undefined): Lang {
  if (header === undefined) return 'en';
  let best: Lang = 'en';
  let bestQ = 0;
  for (const part of header.split(',')) {
    const [tag = '', ...params] = part.trim().split(';');
    const primary = tag.trim().toLowerCase().split('-')[0] ?? '';
    const qParam = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const q = qParam === undefined ? 1 : Number(qParam.slice(2));
    if (!Number.isFinite(q) || q <= 0) continue;
    if (isLang(primary) && q > bestQ) {
      best = primary;
      bestQ = q;
    }
  }
  return best;
}

/** The language: the query's `lang`, else the cookie's, else Accept-Language. */
export function chooseLang(
  query: unknown,
  cookie: string | undefined,
  acceptLanguage: string | undefined,
): Lang {
  if (isLang(query)) return query;
  if (isLang(cookie)) return cookie;
  return fromAcceptLanguage(acceptLanguage);
}

/** Dates as the reader's language writes them, in UTC (the store's times are UTC). */
export function formatTime(iso: string | null, lang: Lang): string {
  if (iso === null) return '';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return (
    new Intl.DateTimeFormat(lang === 'vi' ? 'vi-VN' : 'en-GB', {
      dateStyle: 'medium',
      timeStyle: 'medium',
      timeZone: 'UTC',
    }).format(date) + ' UTC'
  );
}
