import { isArabicScript } from '../../core/estimate-tokens'
/**
 * The sentences the simulator answers with, split once at start-up into word pieces. A piece is one
 * simulated token; pieces are sized so the gateway's token estimator (4 Latin or 2 Arabic characters a
 * token) roughly agrees with the number of pieces.
 */

const englishSentences = [
  'Here is a short answer to your question.',
  'The Nile flows north through eleven countries before it reaches the sea.',
  'Let me walk through the main points one at a time.',
  'A good first step is to check the inputs and the expected output.',
  'This depends on the details of your setup.',
  'In most cases the simplest approach works well enough.',
  'You can measure the result and adjust the plan as you go.',
  'Cairo sits on the banks of the river near the start of the delta.',
  'There are a few trade-offs worth keeping in mind.',
  'Small changes are easier to review and to undo.',
  'If anything is unclear, ask and I will explain it again.',
  'The answer is yes, with one important condition.',
  'Start with the data you have and refine it later.',
  'Many people find it helpful to write the steps down first.',
  'Each option has a cost, so compare them side by side.',
  'The weather in Aswan is usually warm and dry.',
  'A clear question tends to get a clear answer.',
  'Try the example below and see what it prints.',
  'That is a reasonable plan for a first version.',
  'Keep the limits in mind when you scale it up.',
  'Tea with mint is a common drink across the region.',
  'Good tests describe what the code should do.',
  'Time zones matter when you schedule anything monthly.',
  'The short version is that both methods give the same result.',
  'Feel free to share more context if you need a longer reply.',
]

const arabicSentences = [
  'هذه إجابة قصيرة عن سؤالك.',
  'يجري نهر النيل نحو الشمال حتى يصل إلى البحر.',
  'دعني أشرح النقاط الرئيسية واحدة تلو الأخرى.',
  'الخطوة الأولى هي التحقق من المدخلات.',
  'يعتمد ذلك على تفاصيل إعدادك.',
  'في أغلب الحالات يكفي الحل البسيط.',
  'تقع القاهرة على ضفاف النيل.',
  'هناك بعض الأمور التي يجب مراعاتها.',
  'التغييرات الصغيرة أسهل في المراجعة.',
  'إذا كان هناك شيء غير واضح فاسألني.',
  'الجواب نعم مع شرط واحد مهم.',
  'ابدأ بالبيانات المتاحة ثم حسنها لاحقا.',
  'الطقس في أسوان دافئ وجاف عادة.',
  'السؤال الواضح يحصل على جواب واضح.',
  'جرب المثال التالي وانظر إلى النتيجة.',
  'هذه خطة معقولة للنسخة الأولى.',
  'الشاي بالنعناع مشروب شائع في المنطقة.',
  'يمكنك قياس النتيجة وتعديل الخطة.',
  'شاركني المزيد من التفاصيل إذا أردت ردا أطول.',
]


/** The estimator's weight of one character, in quarter tokens. */
function quarterTokens(code: number): number {
  return isArabicScript(code) ? 2 : 1
}

/** A piece holds at most this many quarter tokens unless it is a single character. */
const maxPieceQuarters = 6

/** Splits one word (with its leading space, if any) into pieces of about equal estimator weight. */
function splitWord(word: string): string[] {
  let weight = 0
  for (let i = 0; i < word.length; i++) weight += quarterTokens(word.charCodeAt(i))
  const count = Math.ceil(weight / maxPieceQuarters)
  if (count <= 1) return [word]
  const target = weight / count
  const pieces: string[] = []
  let start = 0
  let accumulated = 0
  for (let i = 0; i < word.length; i++) {
    accumulated += quarterTokens(word.charCodeAt(i))
    if (accumulated >= target * (pieces.length + 1) && pieces.length < count - 1) {
      pieces.push(word.slice(start, i + 1))
      start = i + 1
    }
  }
  if (start < word.length) pieces.push(word.slice(start))
  return pieces
}

/** Splits a text into word pieces: each word keeps its leading space, long words become several pieces. */
export function toWordPieces(text: string): string[] {
  return text.split(' ').flatMap((word, index) => (word === '' ? [] : splitWord(index === 0 ? word : ` ${word}`)))
}

/** The pieces of one sentence as it follows another sentence: the first piece starts with a space. */
export type Sentence = readonly string[]

function toSentences(texts: string[]): Sentence[] {
  return texts.map((text) => toWordPieces(` ${text}`))
}

/** Sentences by language, split into pieces once. */
export const replyVocabulary: { readonly english: readonly Sentence[]; readonly arabic: readonly Sentence[] } = {
  english: toSentences(englishSentences),
  arabic: toSentences(arabicSentences),
}
